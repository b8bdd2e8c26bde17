-- Telemetry (telemetry.db): the observability domain's tables. Hand-written: drizzle-kit knows
-- ops.db only, and the log segments' FTS5 tables are created at run time (see
-- src/domains/observability/segments.ts), one content table and one trigram index per segment.
CREATE TABLE `obs_projects` (
	`id` integer PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `obs_projects_project` ON `obs_projects` (`project_id`);
--> statement-breakpoint
CREATE TABLE `log_segments` (
	`id` integer PRIMARY KEY NOT NULL,
	`lo` integer NOT NULL,
	`min_key` integer,
	`max_key` integer,
	`rows` integer DEFAULT 0 NOT NULL,
	`bytes` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `log_volume` (
	`minute` integer NOT NULL,
	`project` integer NOT NULL,
	`environment` text NOT NULL,
	`service` text NOT NULL,
	`severity` integer NOT NULL,
	`n` integer NOT NULL,
	PRIMARY KEY(`minute`, `project`, `environment`, `service`, `severity`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `obs_seen` (
	`project` integer NOT NULL,
	`environment` text NOT NULL,
	`service` text NOT NULL,
	`last_seen` integer NOT NULL,
	PRIMARY KEY(`project`, `environment`, `service`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TABLE `spans` (
	`id` integer PRIMARY KEY NOT NULL,
	`project` integer NOT NULL,
	`environment` text NOT NULL,
	`service` text NOT NULL,
	`trace_id` text NOT NULL,
	`span_id` text NOT NULL,
	`parent_span_id` text,
	`name` text NOT NULL,
	`kind` text,
	`status` text NOT NULL,
	`duration_ms` real NOT NULL,
	`method` text,
	`route` text,
	`http_status` text
);
--> statement-breakpoint
CREATE INDEX `spans_trace` ON `spans` (`trace_id`);
--> statement-breakpoint
CREATE INDEX `spans_roots` ON `spans` (`project`) WHERE `parent_span_id` IS NULL;
--> statement-breakpoint
CREATE TABLE `metric_series` (
	`id` integer PRIMARY KEY NOT NULL,
	`project` integer NOT NULL,
	`environment` text NOT NULL,
	`service` text NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`unit` text NOT NULL,
	`attrs` text NOT NULL,
	`last_seen` integer NOT NULL,
	`delta_value` real,
	`delta_count` real,
	`delta_sum` real
);
--> statement-breakpoint
CREATE UNIQUE INDEX `metric_series_key` ON `metric_series` (`name`, `project`, `environment`, `service`, `attrs`);
--> statement-breakpoint
CREATE INDEX `metric_series_seen` ON `metric_series` (`last_seen`);
--> statement-breakpoint
CREATE TABLE `metric_samples` (
	`series` integer NOT NULL,
	`t` integer NOT NULL,
	`value` real,
	`count` real,
	`sum` real,
	`min` real,
	`max` real,
	`buckets` text,
	PRIMARY KEY(`series`, `t`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `metric_samples_t` ON `metric_samples` (`t`);
--> statement-breakpoint
CREATE TABLE `metric_rollups` (
	`series` integer NOT NULL,
	`t` integer NOT NULL,
	`value` real,
	`min` real,
	`max` real,
	`n` integer NOT NULL,
	`count` real,
	`sum` real,
	`buckets` text,
	PRIMARY KEY(`series`, `t`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE INDEX `metric_rollups_t` ON `metric_rollups` (`t`);
--> statement-breakpoint
CREATE TABLE `obs_state` (
	`key` text PRIMARY KEY NOT NULL,
	`value` integer NOT NULL
);

CREATE TABLE `alert_channels` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`url_sealed_id` text NOT NULL,
	`url_hint` text NOT NULL,
	`signing_sealed_id` text,
	`notice_kinds` text DEFAULT '[]' NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `alert_channels_project_name` ON `alert_channels` (`project_id`,`name`);--> statement-breakpoint
CREATE TABLE `alert_deliveries` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`channel_id` text NOT NULL,
	`rule_id` text,
	`event` text NOT NULL,
	`message` text NOT NULL,
	`state` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`status_code` integer,
	`last_error` text,
	`created_at` integer NOT NULL,
	`delivered_at` integer,
	`next_attempt_at` integer
);
--> statement-breakpoint
CREATE INDEX `alert_deliveries_project` ON `alert_deliveries` (`project_id`,`id`);--> statement-breakpoint
CREATE INDEX `alert_deliveries_channel` ON `alert_deliveries` (`channel_id`,`id`);--> statement-breakpoint
CREATE TABLE `alert_rules` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`environment` text,
	`service` text,
	`metric` text,
	`op` text DEFAULT 'above' NOT NULL,
	`threshold` real NOT NULL,
	`for_seconds` integer DEFAULT 0 NOT NULL,
	`query` text,
	`level` text,
	`window_seconds` integer DEFAULT 300 NOT NULL,
	`channels` text DEFAULT '[]' NOT NULL,
	`enabled` integer DEFAULT true NOT NULL,
	`state` text DEFAULT 'ok' NOT NULL,
	`since` integer,
	`notified` integer DEFAULT false NOT NULL,
	`last_value` real,
	`last_evaluated_at` integer,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `alert_rules_project_name` ON `alert_rules` (`project_id`,`name`);--> statement-breakpoint
CREATE TABLE `alert_settings` (
	`key` text PRIMARY KEY NOT NULL,
	`value` text NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `alert_silences` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`rule_id` text,
	`reason` text DEFAULT '' NOT NULL,
	`starts_at` integer NOT NULL,
	`ends_at` integer NOT NULL,
	`created_by` text
);
--> statement-breakpoint
CREATE INDEX `alert_silences_project` ON `alert_silences` (`project_id`,`ends_at`);
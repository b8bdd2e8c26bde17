CREATE TABLE `domain_hosts` (
	`host` text PRIMARY KEY NOT NULL,
	`resource_id` text NOT NULL,
	FOREIGN KEY (`resource_id`) REFERENCES `resources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `domain_hosts_resource` ON `domain_hosts` (`resource_id`);--> statement-breakpoint
CREATE TABLE `job_run_lines` (
	`run_id` integer NOT NULL,
	`seq` integer NOT NULL,
	`at` integer NOT NULL,
	`level` text NOT NULL,
	`line` text NOT NULL,
	FOREIGN KEY (`run_id`) REFERENCES `job_runs`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `job_run_lines_run_seq` ON `job_run_lines` (`run_id`,`seq`);--> statement-breakpoint
CREATE TABLE `job_runs` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`resource_id` text NOT NULL,
	`environment` text NOT NULL,
	`job` text NOT NULL,
	`status` text NOT NULL,
	`trigger` text NOT NULL,
	`requested_by` text NOT NULL,
	`queued_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	`exit_code` integer,
	`error` text,
	`lines` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`resource_id`) REFERENCES `resources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `job_runs_resource` ON `job_runs` (`resource_id`,`id`);--> statement-breakpoint
CREATE INDEX `job_runs_status` ON `job_runs` (`status`);--> statement-breakpoint
CREATE TABLE `job_schedules` (
	`resource_id` text PRIMARY KEY NOT NULL,
	`cron` text NOT NULL,
	`next_run_at` integer NOT NULL,
	FOREIGN KEY (`resource_id`) REFERENCES `resources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `resource_databases` (
	`resource_id` text PRIMARY KEY NOT NULL,
	`plane_database` text NOT NULL,
	`plane_role` text NOT NULL,
	`password_id` text,
	`adopted` integer NOT NULL,
	`created_at` integer NOT NULL,
	`password_rotated_at` integer,
	FOREIGN KEY (`resource_id`) REFERENCES `resources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `resources` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`environment` text,
	`scope` text NOT NULL,
	`type` text NOT NULL,
	`name` text NOT NULL,
	`spec` text NOT NULL,
	`version` integer NOT NULL,
	`status_state` text NOT NULL,
	`status_summary` text NOT NULL,
	`status_detail` text DEFAULT '{}' NOT NULL,
	`status_at` integer NOT NULL,
	`observed_at` integer,
	`restart_note` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `resources_unique_name` ON `resources` (`project_id`,`scope`,`type`,`name`);--> statement-breakpoint
CREATE INDEX `resources_project_type` ON `resources` (`project_id`,`type`);--> statement-breakpoint
CREATE TABLE `secret_group_renders` (
	`group_id` text NOT NULL,
	`version` integer NOT NULL,
	`secret` text NOT NULL,
	`value_id` text NOT NULL,
	`actor` text NOT NULL,
	`rendered_at` integer NOT NULL,
	FOREIGN KEY (`group_id`) REFERENCES `resources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `secret_group_renders_group_version` ON `secret_group_renders` (`group_id`,`version`);--> statement-breakpoint
CREATE TABLE `secret_variables` (
	`group_id` text NOT NULL,
	`name` text NOT NULL,
	`kind` text NOT NULL,
	`value_id` text NOT NULL,
	`version` integer NOT NULL,
	`rendered_version` integer,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`group_id`) REFERENCES `resources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `secret_variables_group_name` ON `secret_variables` (`group_id`,`name`);--> statement-breakpoint
CREATE TABLE `unit_secrets` (
	`project_id` text NOT NULL,
	`unit` text NOT NULL,
	`name` text NOT NULL,
	`value_id` text NOT NULL,
	`version` integer NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `unit_secrets_project_unit_name` ON `unit_secrets` (`project_id`,`unit`,`name`);--> statement-breakpoint
CREATE INDEX `unit_secrets_project` ON `unit_secrets` (`project_id`);
CREATE TABLE `audit_log` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`at` integer NOT NULL,
	`actor` text NOT NULL,
	`operator_id` text,
	`via` text NOT NULL,
	`ip` text DEFAULT '' NOT NULL,
	`action` text NOT NULL,
	`target` text DEFAULT '' NOT NULL,
	`outcome` text NOT NULL,
	`reason` text DEFAULT '' NOT NULL,
	`project` text,
	`environment` text,
	`context` text
);
--> statement-breakpoint
CREATE INDEX `audit_log_project_id` ON `audit_log` (`project`,`id`);--> statement-breakpoint
CREATE INDEX `audit_log_actor` ON `audit_log` (`actor`);--> statement-breakpoint
CREATE INDEX `audit_log_at` ON `audit_log` (`at`);--> statement-breakpoint
CREATE TABLE `scheduler_items` (
	`id` text PRIMARY KEY NOT NULL,
	`kind` text NOT NULL,
	`payload` text DEFAULT '{}' NOT NULL,
	`state` text DEFAULT 'pending' NOT NULL,
	`run_at` integer NOT NULL,
	`leased_until` integer,
	`attempts` integer DEFAULT 0 NOT NULL,
	`max_attempts` integer DEFAULT 5 NOT NULL,
	`last_error` text,
	`dedupe_key` text,
	`created_at` integer NOT NULL,
	`finished_at` integer
);
--> statement-breakpoint
CREATE INDEX `scheduler_items_due` ON `scheduler_items` (`state`,`run_at`);--> statement-breakpoint
CREATE UNIQUE INDEX `scheduler_items_dedupe` ON `scheduler_items` (`dedupe_key`);--> statement-breakpoint
CREATE TABLE `scheduler_tasks` (
	`id` text PRIMARY KEY NOT NULL,
	`cron` text NOT NULL,
	`next_run_at` integer NOT NULL,
	`last_run_at` integer,
	`last_status` text,
	`last_error` text,
	`leased_until` integer
);
--> statement-breakpoint
CREATE TABLE `sealed_values` (
	`id` text PRIMARY KEY NOT NULL,
	`key_id` text NOT NULL,
	`wrapped_dek` blob NOT NULL,
	`ciphertext` blob NOT NULL,
	`purpose` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `secrets_keyring` (
	`id` text PRIMARY KEY NOT NULL,
	`verifier` blob NOT NULL,
	`created_at` integer NOT NULL,
	`retired_at` integer
);

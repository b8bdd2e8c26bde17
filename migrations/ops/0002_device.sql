CREATE TABLE `device_grants` (
	`id` text PRIMARY KEY NOT NULL,
	`device_digest` text NOT NULL,
	`user_code` text NOT NULL,
	`client` text NOT NULL,
	`client_name` text DEFAULT '' NOT NULL,
	`requested_project` text,
	`ip` text DEFAULT '' NOT NULL,
	`user_agent` text DEFAULT '' NOT NULL,
	`status` text NOT NULL,
	`poll_interval` integer NOT NULL,
	`last_polled_at` integer,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`decided_at` integer,
	`decided_by` text,
	`role_id` text,
	`role_name` text,
	`scopes` text,
	`project_id` text,
	`token_name` text,
	`token_expires_at` integer,
	`redeemed_at` integer,
	`token_id` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `device_grants_device_digest` ON `device_grants` (`device_digest`);--> statement-breakpoint
CREATE INDEX `device_grants_user_code` ON `device_grants` (`user_code`);--> statement-breakpoint
CREATE INDEX `device_grants_status_expires` ON `device_grants` (`status`,`expires_at`);
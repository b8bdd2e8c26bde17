CREATE TABLE `cli_releases` (
	`id` text PRIMARY KEY NOT NULL,
	`version` text NOT NULL,
	`target` text NOT NULL,
	`digest` text NOT NULL,
	`size` integer NOT NULL,
	`published_at` integer NOT NULL,
	`published_by` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `cli_releases_version_target` ON `cli_releases` (`version`,`target`);--> statement-breakpoint
CREATE INDEX `cli_releases_target_published` ON `cli_releases` (`target`,`published_at`);--> statement-breakpoint
CREATE TABLE `install_codes` (
	`id` text PRIMARY KEY NOT NULL,
	`digest` text NOT NULL,
	`operator_id` text NOT NULL,
	`role_id` text NOT NULL,
	`role_name` text NOT NULL,
	`scopes` text NOT NULL,
	`project_id` text NOT NULL,
	`created_at` integer NOT NULL,
	`expires_at` integer NOT NULL,
	`used_at` integer,
	`token_id` text
);
--> statement-breakpoint
CREATE UNIQUE INDEX `install_codes_digest` ON `install_codes` (`digest`);--> statement-breakpoint
CREATE INDEX `install_codes_expires` ON `install_codes` (`expires_at`);--> statement-breakpoint
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
CREATE INDEX `device_grants_status_expires` ON `device_grants` (`status`,`expires_at`);--> statement-breakpoint
CREATE TABLE `status_components` (
	`slug` text PRIMARY KEY NOT NULL,
	`name` text NOT NULL,
	`state` text NOT NULL,
	`since` integer NOT NULL,
	`platform` integer DEFAULT false NOT NULL,
	`position` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `status_transitions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`component` text NOT NULL,
	`from_state` text NOT NULL,
	`to_state` text NOT NULL,
	`at` integer NOT NULL,
	`reason` text DEFAULT '' NOT NULL,
	`source` text DEFAULT 'probe' NOT NULL,
	FOREIGN KEY (`component`) REFERENCES `status_components`(`slug`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `status_transitions_component_at` ON `status_transitions` (`component`,`at`);--> statement-breakpoint
CREATE INDEX `status_transitions_at` ON `status_transitions` (`at`);
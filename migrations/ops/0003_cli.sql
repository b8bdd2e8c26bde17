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
CREATE INDEX `install_codes_expires` ON `install_codes` (`expires_at`);
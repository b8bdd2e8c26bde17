CREATE TABLE `source_saves` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`project_id` text NOT NULL,
	`source_id` text,
	`repo` text NOT NULL,
	`ref` text,
	`branch` text,
	`message` text NOT NULL,
	`files` text NOT NULL,
	`payload` blob,
	`status` text NOT NULL,
	`error` text,
	`log` text DEFAULT '' NOT NULL,
	`commit_sha` text,
	`pull_number` integer,
	`pull_url` text,
	`merge_sha` text,
	`merged_at` integer,
	`merged_by` text,
	`scan_id` integer,
	`requested_by` text NOT NULL,
	`actor` text NOT NULL,
	`created_at` integer NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`source_id`) REFERENCES `sources`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `source_saves_source` ON `source_saves` (`source_id`,`id`);--> statement-breakpoint
CREATE INDEX `source_saves_project` ON `source_saves` (`project_id`,`id`);--> statement-breakpoint
CREATE TABLE `source_scans` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`project_id` text NOT NULL,
	`source_id` text,
	`repo` text NOT NULL,
	`installation_id` integer NOT NULL,
	`git_ref` text NOT NULL,
	`default_branch` integer NOT NULL,
	`commit_sha` text,
	`status` text NOT NULL,
	`error` text,
	`log` text DEFAULT '' NOT NULL,
	`services` text DEFAULT '[]' NOT NULL,
	`steps` text DEFAULT '[]' NOT NULL,
	`hooks` text DEFAULT '{}' NOT NULL,
	`reconciled` text,
	`requested_by` text NOT NULL,
	`actor` text NOT NULL,
	`writable_environments` text DEFAULT '[]' NOT NULL,
	`created_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`source_id`) REFERENCES `sources`(`id`) ON UPDATE no action ON DELETE set null
);
--> statement-breakpoint
CREATE INDEX `source_scans_project` ON `source_scans` (`project_id`,`id`);--> statement-breakpoint
CREATE TABLE `source_steps` (
	`source_id` text NOT NULL,
	`name` text NOT NULL,
	`spec` text NOT NULL,
	`declared` integer NOT NULL,
	`commit_sha` text NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`source_id`) REFERENCES `sources`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `source_steps_name` ON `source_steps` (`source_id`,`name`);--> statement-breakpoint
CREATE TABLE `sources` (
	`id` text PRIMARY KEY NOT NULL,
	`project_id` text NOT NULL,
	`repo` text NOT NULL,
	`installation_id` integer NOT NULL,
	`default_branch` text NOT NULL,
	`connected_at` integer NOT NULL,
	`connected_by` text NOT NULL,
	`last_event_at` integer,
	`declared` text,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sources_project_repo` ON `sources` (`project_id`,`repo`);--> statement-breakpoint
CREATE INDEX `sources_repo` ON `sources` (`repo`);--> statement-breakpoint
CREATE TABLE `git_owners` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`owner` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `git_owners_owner_unique` ON `git_owners` (`owner`);--> statement-breakpoint
CREATE TABLE `git_pulls` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`repo` text NOT NULL,
	`number` integer NOT NULL,
	`head` text NOT NULL,
	`base` text NOT NULL,
	`title` text NOT NULL,
	`body` text DEFAULT '' NOT NULL,
	`state` text NOT NULL,
	`head_sha` text NOT NULL,
	`merge_sha` text,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `git_pulls_number` ON `git_pulls` (`repo`,`number`);--> statement-breakpoint
CREATE TABLE `git_records` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`repo` text NOT NULL,
	`kind` text NOT NULL,
	`sha` text NOT NULL,
	`parent_id` integer,
	`name` text NOT NULL,
	`state` text NOT NULL,
	`conclusion` text,
	`detail` text DEFAULT '{}' NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `git_records_commit` ON `git_records` (`repo`,`sha`);
CREATE TABLE `module_consumers` (
	`project_id` text NOT NULL,
	`registry` text NOT NULL,
	`package_name` text NOT NULL,
	`version` text NOT NULL,
	`build_id` integer,
	`recorded_at` integer NOT NULL,
	PRIMARY KEY(`project_id`, `registry`, `package_name`, `version`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `module_consumers_package` ON `module_consumers` (`registry`,`package_name`);--> statement-breakpoint
CREATE TABLE `module_notes` (
	`project_id` text NOT NULL,
	`module` text NOT NULL,
	`version` text NOT NULL,
	`notes` text NOT NULL,
	`recorded_at` integer NOT NULL,
	PRIMARY KEY(`project_id`, `module`, `version`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `module_releases` (
	`project_id` text NOT NULL,
	`module` text NOT NULL,
	`part` text NOT NULL,
	`version` text NOT NULL,
	`registry` text NOT NULL,
	`package_name` text NOT NULL,
	`commit_sha` text NOT NULL,
	`build_id` integer,
	`at` integer NOT NULL,
	PRIMARY KEY(`project_id`, `module`, `part`, `version`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `module_sets` (
	`project_id` text PRIMARY KEY NOT NULL,
	`version` text NOT NULL,
	`commit_sha` text NOT NULL,
	`recorded_at` integer NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `modules` (
	`project_id` text NOT NULL,
	`name` text NOT NULL,
	`description` text DEFAULT '' NOT NULL,
	`crate_name` text,
	`layer_name` text,
	`requires` text DEFAULT '[]' NOT NULL,
	`current` integer DEFAULT true NOT NULL,
	`version` text NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`project_id`, `name`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);

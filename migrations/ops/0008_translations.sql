CREATE TABLE `tms_attachments` (
	`project_id` text NOT NULL,
	`bundle_id` integer NOT NULL,
	`version_id` integer NOT NULL,
	`attached_at` integer NOT NULL,
	`attached_by` text NOT NULL,
	PRIMARY KEY(`project_id`, `bundle_id`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`bundle_id`) REFERENCES `tms_bundles`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`version_id`) REFERENCES `tms_versions`(`id`) ON UPDATE no action ON DELETE no action
);
--> statement-breakpoint
CREATE INDEX `tms_attachments_bundle` ON `tms_attachments` (`bundle_id`);--> statement-breakpoint
CREATE TABLE `tms_bundles` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`project_id` text NOT NULL,
	`kind` text NOT NULL,
	`name` text NOT NULL,
	`source_locale` text NOT NULL,
	`package_registry` text,
	`package_name` text,
	`owner` text NOT NULL,
	`generation` integer DEFAULT 0 NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tms_bundles_project_name` ON `tms_bundles` (`project_id`,`name`);--> statement-breakpoint
CREATE UNIQUE INDEX `tms_bundles_estate_name` ON `tms_bundles` (`name`) WHERE kind = 'estate';--> statement-breakpoint
CREATE UNIQUE INDEX `tms_bundles_package` ON `tms_bundles` (`package_registry`,`package_name`);--> statement-breakpoint
CREATE INDEX `tms_bundles_kind` ON `tms_bundles` (`kind`);--> statement-breakpoint
CREATE TABLE `tms_history` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`bundle_id` integer NOT NULL,
	`key_id` integer NOT NULL,
	`project_id` text,
	`locale` text NOT NULL,
	`value` text NOT NULL,
	`status` text,
	`version` integer NOT NULL,
	`written_at` integer NOT NULL,
	`written_by` text NOT NULL,
	`ended_at` integer NOT NULL,
	`ended_by` text NOT NULL,
	`reason` text NOT NULL,
	FOREIGN KEY (`bundle_id`) REFERENCES `tms_bundles`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`key_id`) REFERENCES `tms_keys`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tms_history_key` ON `tms_history` (`key_id`,`locale`);--> statement-breakpoint
CREATE TABLE `tms_keys` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`bundle_id` integer NOT NULL,
	`namespace` text NOT NULL,
	`key` text NOT NULL,
	`created_at` integer NOT NULL,
	`deleted_at` integer,
	FOREIGN KEY (`bundle_id`) REFERENCES `tms_bundles`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tms_keys_bundle_ns_key` ON `tms_keys` (`bundle_id`,`namespace`,`key`);--> statement-breakpoint
CREATE TABLE `tms_overrides` (
	`project_id` text NOT NULL,
	`bundle_id` integer NOT NULL,
	`key_id` integer NOT NULL,
	`locale` text NOT NULL,
	`value` text NOT NULL,
	`version` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL,
	PRIMARY KEY(`project_id`, `key_id`, `locale`),
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`bundle_id`) REFERENCES `tms_bundles`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`key_id`) REFERENCES `tms_keys`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `tms_overrides_project_bundle` ON `tms_overrides` (`project_id`,`bundle_id`);--> statement-breakpoint
CREATE TABLE `tms_project_state` (
	`project_id` text PRIMARY KEY NOT NULL,
	`generation` integer NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `tms_state` (
	`id` integer PRIMARY KEY NOT NULL,
	`generation` integer NOT NULL
);
--> statement-breakpoint
CREATE TABLE `tms_values` (
	`key_id` integer NOT NULL,
	`locale` text NOT NULL,
	`value` text NOT NULL,
	`status` text NOT NULL,
	`version` integer NOT NULL,
	`updated_at` integer NOT NULL,
	`updated_by` text NOT NULL,
	PRIMARY KEY(`key_id`, `locale`),
	FOREIGN KEY (`key_id`) REFERENCES `tms_keys`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `tms_version_keys` (
	`version_id` integer NOT NULL,
	`key_id` integer NOT NULL,
	PRIMARY KEY(`version_id`, `key_id`),
	FOREIGN KEY (`version_id`) REFERENCES `tms_versions`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`key_id`) REFERENCES `tms_keys`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `tms_versions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`bundle_id` integer NOT NULL,
	`version` text NOT NULL,
	`registered_at` integer NOT NULL,
	`registered_by` text NOT NULL,
	FOREIGN KEY (`bundle_id`) REFERENCES `tms_bundles`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `tms_versions_bundle_version` ON `tms_versions` (`bundle_id`,`version`);
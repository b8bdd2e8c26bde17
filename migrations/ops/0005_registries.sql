CREATE TABLE `oci_blob_links` (
	`package_id` integer NOT NULL,
	`digest` text NOT NULL,
	`size` integer NOT NULL,
	`created_at` integer NOT NULL,
	PRIMARY KEY(`package_id`, `digest`),
	FOREIGN KEY (`package_id`) REFERENCES `packages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `oci_blob_links_digest` ON `oci_blob_links` (`digest`);--> statement-breakpoint
CREATE TABLE `oci_uploads` (
	`id` text PRIMARY KEY NOT NULL,
	`package_id` integer NOT NULL,
	`size` integer DEFAULT 0 NOT NULL,
	`blob_digest` text,
	`in_file` integer DEFAULT false NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`package_id`) REFERENCES `packages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `oci_uploads_updated` ON `oci_uploads` (`updated_at`);--> statement-breakpoint
CREATE TABLE `package_documents` (
	`package_id` integer NOT NULL,
	`kind` text NOT NULL,
	`body` text NOT NULL,
	`etag` text NOT NULL,
	`base_url` text NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`package_id`, `kind`),
	FOREIGN KEY (`package_id`) REFERENCES `packages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `package_files` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`version_id` integer NOT NULL,
	`name` text NOT NULL,
	`role` text NOT NULL,
	`digest` text NOT NULL,
	`size` integer NOT NULL,
	`media_type` text DEFAULT 'application/octet-stream' NOT NULL,
	FOREIGN KEY (`version_id`) REFERENCES `package_versions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `package_files_version_name` ON `package_files` (`version_id`,`name`);--> statement-breakpoint
CREATE INDEX `package_files_digest` ON `package_files` (`digest`);--> statement-breakpoint
CREATE TABLE `package_tags` (
	`package_id` integer NOT NULL,
	`tag` text NOT NULL,
	`version_id` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`package_id`, `tag`),
	FOREIGN KEY (`package_id`) REFERENCES `packages`(`id`) ON UPDATE no action ON DELETE cascade,
	FOREIGN KEY (`version_id`) REFERENCES `package_versions`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `package_versions` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`package_id` integer NOT NULL,
	`version` text NOT NULL,
	`version_key` text NOT NULL,
	`yanked` integer DEFAULT false NOT NULL,
	`publisher` text NOT NULL,
	`publisher_id` text,
	`published_at` integer NOT NULL,
	`size_bytes` integer NOT NULL,
	`digest` text NOT NULL,
	`integrity` text,
	`shasum` text,
	`manifest` text NOT NULL,
	FOREIGN KEY (`package_id`) REFERENCES `packages`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `package_versions_key` ON `package_versions` (`package_id`,`version_key`);--> statement-breakpoint
CREATE INDEX `package_versions_published` ON `package_versions` (`package_id`,`published_at`);--> statement-breakpoint
CREATE TABLE `packages` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`registry` text NOT NULL,
	`name` text NOT NULL,
	`name_key` text NOT NULL,
	`lookup` text NOT NULL,
	`project_id` text NOT NULL,
	`claimed_by` text NOT NULL,
	`created_at` integer NOT NULL,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `packages_registry_key` ON `packages` (`registry`,`name_key`);--> statement-breakpoint
CREATE INDEX `packages_registry_lookup` ON `packages` (`registry`,`lookup`);--> statement-breakpoint
CREATE INDEX `packages_project` ON `packages` (`project_id`);--> statement-breakpoint
CREATE TABLE `registry_blobs` (
	`digest` text PRIMARY KEY NOT NULL,
	`size` integer NOT NULL,
	`created_at` integer NOT NULL
);

CREATE TABLE `sandbox_identities` (
	`slot` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`project_id` text NOT NULL,
	`created_at` integer NOT NULL
);
--> statement-breakpoint
CREATE UNIQUE INDEX `sandbox_identities_project_id_unique` ON `sandbox_identities` (`project_id`);
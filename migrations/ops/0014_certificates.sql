CREATE TABLE `certificates` (
	`host` text PRIMARY KEY NOT NULL,
	`resource_id` text,
	`project_id` text,
	`source` text NOT NULL,
	`state` text NOT NULL,
	`reason` text,
	`sealed_id` text,
	`not_before` integer,
	`not_after` integer,
	`failures` integer DEFAULT 0 NOT NULL,
	`next_attempt_at` integer,
	`updated_at` integer NOT NULL
);
--> statement-breakpoint
CREATE INDEX `certificates_due` ON `certificates` (`next_attempt_at`);--> statement-breakpoint
CREATE INDEX `certificates_resource` ON `certificates` (`resource_id`);
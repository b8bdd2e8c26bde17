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
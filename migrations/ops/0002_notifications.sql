CREATE TABLE `mail_outbox` (
	`id` text PRIMARY KEY NOT NULL,
	`operator_id` text NOT NULL,
	`project` text NOT NULL,
	`kind` text NOT NULL,
	`params` text NOT NULL,
	`link` text,
	`state` text DEFAULT 'pending' NOT NULL,
	`attempts` integer DEFAULT 0 NOT NULL,
	`last_error` text,
	`created_at` integer NOT NULL,
	`sent_at` integer
);
--> statement-breakpoint
CREATE INDEX `mail_outbox_state` ON `mail_outbox` (`state`,`created_at`);--> statement-breakpoint
CREATE TABLE `notices` (
	`id` text PRIMARY KEY NOT NULL,
	`operator_id` text NOT NULL,
	`project_id` text NOT NULL,
	`project` text NOT NULL,
	`kind` text NOT NULL,
	`params` text NOT NULL,
	`link` text,
	`created_at` integer NOT NULL,
	`read_at` integer
);
--> statement-breakpoint
CREATE INDEX `notices_operator` ON `notices` (`operator_id`,`id`);--> statement-breakpoint
CREATE INDEX `notices_operator_unread` ON `notices` (`operator_id`,`read_at`);--> statement-breakpoint
CREATE TABLE `notification_settings` (
	`operator_id` text NOT NULL,
	`project_id` text NOT NULL,
	`kind` text NOT NULL,
	`in_app` integer NOT NULL,
	`email` integer NOT NULL,
	`updated_at` integer NOT NULL,
	PRIMARY KEY(`operator_id`, `project_id`, `kind`)
);
--> statement-breakpoint
CREATE INDEX `notification_settings_project_kind` ON `notification_settings` (`project_id`,`kind`);
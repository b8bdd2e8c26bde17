CREATE TABLE `build_log_lines` (
	`build_id` integer NOT NULL,
	`seq` integer NOT NULL,
	`at` integer NOT NULL,
	`level` text NOT NULL,
	`step` text NOT NULL,
	`line` text NOT NULL,
	PRIMARY KEY(`build_id`, `seq`),
	FOREIGN KEY (`build_id`) REFERENCES `builds`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE TABLE `builds` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`project_id` text NOT NULL,
	`project` text NOT NULL,
	`environment` text NOT NULL,
	`service` text NOT NULL,
	`kind` text NOT NULL,
	`status` text NOT NULL,
	`trigger` text NOT NULL,
	`requested_by` text NOT NULL,
	`source_id` text,
	`repo` text NOT NULL,
	`branch` text,
	`commit_sha` text NOT NULL,
	`author` text NOT NULL,
	`message` text NOT NULL,
	`commit_time` integer NOT NULL,
	`queued_at` integer NOT NULL,
	`started_at` integer,
	`finished_at` integer,
	`error` text,
	`failure_kind` text,
	`cache_hit` real,
	`image_ref` text,
	`image_digest` text,
	`image_size_bytes` integer,
	`host_check_run_id` integer,
	`host_status_id` integer,
	`step_timings` text DEFAULT '[]' NOT NULL,
	`plan` text,
	`cancel_requested` integer DEFAULT false NOT NULL,
	`step_item` text,
	`dispatch_seq` integer,
	`retry_of` integer,
	`deploy_handed_at` integer,
	`log_lines` integer DEFAULT 0 NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `builds_project_env` ON `builds` (`project_id`,`environment`,`service`,`id`);--> statement-breakpoint
CREATE INDEX `builds_status` ON `builds` (`status`);
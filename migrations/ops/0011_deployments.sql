CREATE TABLE `deployments` (
	`id` integer PRIMARY KEY AUTOINCREMENT NOT NULL,
	`project_id` text NOT NULL,
	`environment` text NOT NULL,
	`service` text NOT NULL,
	`repository` text NOT NULL,
	`image_digest` text NOT NULL,
	`previous_digest` text,
	`build_id` integer,
	`commit_sha` text,
	`message` text NOT NULL,
	`author` text NOT NULL,
	`trigger` text NOT NULL,
	`rollout` text NOT NULL,
	`rollout_note` text,
	`failure_kind` text,
	`in_flight` integer,
	`run_token` text,
	`created_at` integer NOT NULL,
	`created_by` text NOT NULL,
	`finished_at` integer,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE INDEX `deployments_service` ON `deployments` (`project_id`,`environment`,`service`,`id`);--> statement-breakpoint
CREATE UNIQUE INDEX `deployments_one_in_flight` ON `deployments` (`project_id`,`environment`,`service`,`in_flight`);--> statement-breakpoint
CREATE INDEX `deployments_build` ON `deployments` (`build_id`);--> statement-breakpoint
CREATE TABLE `service_runs` (
	`project_id` text NOT NULL,
	`environment` text NOT NULL,
	`service` text NOT NULL,
	`repository` text NOT NULL,
	`current_digest` text NOT NULL,
	`current_deployment_id` integer NOT NULL,
	`replicas` integer NOT NULL,
	`restart_pending` text,
	`health` text,
	`health_note` text,
	`updated_at` integer NOT NULL,
	FOREIGN KEY (`project_id`) REFERENCES `projects`(`id`) ON UPDATE no action ON DELETE cascade
);
--> statement-breakpoint
CREATE UNIQUE INDEX `service_runs_service` ON `service_runs` (`project_id`,`environment`,`service`);--> statement-breakpoint
CREATE INDEX `service_runs_digest` ON `service_runs` (`current_digest`);
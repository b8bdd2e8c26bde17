CREATE TABLE `access_generation` (
	`id` integer PRIMARY KEY NOT NULL,
	`n` integer NOT NULL
);
--> statement-breakpoint
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
--> statement-breakpoint
INSERT INTO `access_generation` (`id`, `n`) VALUES (1, 0);
--> statement-breakpoint
CREATE TRIGGER `access_generation_operators_update` AFTER UPDATE ON `operators` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_operators_delete` AFTER DELETE ON `operators` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_sessions_update` AFTER UPDATE OF `revoked_at`, `expires_at`, `operator_id`, `last_seen_at` ON `sessions` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_sessions_delete` AFTER DELETE ON `sessions` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_tokens_update` AFTER UPDATE OF `revoked_at`, `expires_at`, `scopes`, `project_id`, `operator_id` ON `tokens` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_tokens_delete` AFTER DELETE ON `tokens` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_memberships_insert` AFTER INSERT ON `memberships` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_memberships_update` AFTER UPDATE ON `memberships` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_memberships_delete` AFTER DELETE ON `memberships` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_roles_insert` AFTER INSERT ON `roles` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_roles_update` AFTER UPDATE ON `roles` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_roles_delete` AFTER DELETE ON `roles` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_environment_policies_insert` AFTER INSERT ON `environment_policies` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_environment_policies_update` AFTER UPDATE ON `environment_policies` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_environment_policies_delete` AFTER DELETE ON `environment_policies` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_projects_update` AFTER UPDATE ON `projects` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;
--> statement-breakpoint
CREATE TRIGGER `access_generation_projects_delete` AFTER DELETE ON `projects` BEGIN UPDATE `access_generation` SET `n` = `n` + 1 WHERE `id` = 1; END;

ALTER TABLE `builds` ADD `input_key` text;--> statement-breakpoint
ALTER TABLE `builds` ADD `input_parts` text;--> statement-breakpoint
ALTER TABLE `builds` ADD `reuse_of` integer;--> statement-breakpoint
CREATE INDEX `builds_input_key` ON `builds` (`project_id`,`input_key`);
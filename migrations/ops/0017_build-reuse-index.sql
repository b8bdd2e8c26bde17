DROP INDEX `builds_input_key`;--> statement-breakpoint
CREATE INDEX `builds_project_commit` ON `builds` (`project_id`,`commit_sha`);
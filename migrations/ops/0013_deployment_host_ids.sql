ALTER TABLE `deployments` ADD `host_deployment_id` integer;--> statement-breakpoint
ALTER TABLE `deployments` ADD `host_status_id` integer;
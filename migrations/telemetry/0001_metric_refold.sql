CREATE TABLE `metric_refold` (
	`series` integer NOT NULL,
	`t` integer NOT NULL,
	PRIMARY KEY(`series`, `t`)
) WITHOUT ROWID;
--> statement-breakpoint
CREATE TRIGGER `metric_samples_late` AFTER INSERT ON `metric_samples`
WHEN NEW.`t` < (SELECT `value` FROM `obs_state` WHERE `key` = 'rollup_until')
BEGIN
	INSERT OR IGNORE INTO `metric_refold` (`series`, `t`) VALUES (NEW.`series`, NEW.`t` - NEW.`t` % 300000);
END;

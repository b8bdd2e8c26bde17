DROP TRIGGER IF EXISTS `metric_samples_late`;

/**
 * Loaded before every test file (bunfig.toml). Suites start real servers and real clients (npm,
 * cargo, skopeo, chromium) on a 2-core machine: tests and their setup/teardown hooks get 60 s.
 * (bunfig's own `timeout` covers tests only; hooks would keep bun's 5 s.)
 */
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(60_000);

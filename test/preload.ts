/**
 * Loaded before every test file (bunfig.toml). Suites start real servers and real clients (npm,
 * cargo, skopeo, chromium) on a 2-core machine: tests and their setup/teardown hooks get 60 s.
 * (bunfig's own `timeout` covers tests only; hooks would keep bun's 5 s. And a default set here
 * reaches only the first test file of a multi-file run: `npm test` also passes `--timeout 60000`,
 * which covers every file's tests and hooks.)
 */
import { setDefaultTimeout } from "bun:test";

setDefaultTimeout(60_000);

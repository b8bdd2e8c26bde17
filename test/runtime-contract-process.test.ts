/**
 * The process runtime passes the runtime contract (test/support/runtime-contract.ts): replicas in
 * the sandbox from the Node test image, built, pushed with real skopeo into a test app's registry,
 * pulled and unpacked the way ops does it (test/runtime-fixtures.ts).
 */
import { createTestApp } from "./harness";
import { prepareTestImage } from "./runtime-fixtures";
import { runtimeContract } from "./support/runtime-contract";
import { createProcessRuntime } from "../src/adapters/runtime/process-runtime";

runtimeContract("process", async (hooks) => {
  const t = await createTestApp();
  const prepared = await prepareTestImage(t);
  return {
    runtime: createProcessRuntime({ ...hooks, graceMs: 2000 }),
    image: prepared.image,
    serve: "cd /app && exec node server.js",
    teardown: () => t.close(),
  };
});

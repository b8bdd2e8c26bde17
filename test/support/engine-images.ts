/**
 * Images for the engine suites, which reach no registry but ops's own: a busybox root (Debian's
 * static busybox and its applets) with files added, as a tar for `docker import` or as an OCI
 * layout for a push into ops's registry; and a tiny statically linked Go web server (Debian's
 * golang-go) that answers like the process runtime's Node test app (runtime-fixtures.ts) does, so
 * one contract suite drives both.
 */
import { chmodSync, copyFileSync, mkdirSync, mkdtempSync, readFileSync, symlinkSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { exec } from "./engine-cluster";

const tempDir = (prefix: string) => mkdtempSync(path.join(tmpdir(), prefix));

const APPLETS = ["sh", "httpd", "cat", "echo", "sleep", "ls", "ps", "seq", "dd", "timeout", "env", "id", "kill", "trap", "true", "false", "head", "tail", "wc", "grep", "nc"];

/**
 * The Go app: `/` says what it sees as JSON (port, greeting, secret, replica, pid, uid, env keys);
 * `/crash` exits 3; `/hog` allocates until its memory limit stops it; SIGTERM prints "got SIGTERM"
 * and exits 0 a moment later; it prints "listening on <PORT>" once it listens on every address.
 */
export const GO_APP = String.raw`package main

import (
	"encoding/json"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"sort"
	"strings"
	"syscall"
	"time"
)

var keep [][]byte

func main() {
	port := os.Getenv("PORT")
	http.HandleFunc("/crash", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("bye"))
		go func() { time.Sleep(10 * time.Millisecond); os.Exit(3) }()
	})
	http.HandleFunc("/hog", func(w http.ResponseWriter, r *http.Request) {
		w.Write([]byte("eating"))
		go func() {
			for {
				b := make([]byte, 32<<20)
				for i := range b { b[i] = byte(i) }
				keep = append(keep, b)
				time.Sleep(20 * time.Millisecond)
			}
		}()
	})
	http.HandleFunc("/", func(w http.ResponseWriter, r *http.Request) {
		keys := []string{}
		for _, e := range os.Environ() { keys = append(keys, strings.SplitN(e, "=", 2)[0]) }
		sort.Strings(keys)
		var secret interface{}
		if v, ok := os.LookupEnv("SECRET"); ok { secret = v }
		var replica interface{}
		if v, ok := os.LookupEnv("REPLICA_NAME"); ok { replica = v }
		w.Header().Set("content-type", "application/json")
		json.NewEncoder(w).Encode(map[string]interface{}{"replica": replica, "port": port, "greeting": os.Getenv("GREETING"), "secret": secret, "pid": os.Getpid(), "uid": os.Getuid(), "env_keys": keys})
	})
	sig := make(chan os.Signal, 1)
	signal.Notify(sig, syscall.SIGTERM)
	go func() {
		<-sig
		fmt.Println("got SIGTERM")
		time.Sleep(100 * time.Millisecond)
		os.Exit(0)
	}()
	fmt.Println("listening on " + port)
	if err := http.ListenAndServe(":"+port, nil); err != nil { fmt.Println(err); os.Exit(1) }
}
`;

let goBuild: Promise<Uint8Array> | null = null;

/** The Go app, built once per process with CGO off (a static binary that runs on a bare busybox root). */
export function goApp(): Promise<Uint8Array> {
  goBuild ??= (async () => {
    const dir = tempDir("ops-goapp-");
    writeFileSync(path.join(dir, "main.go"), GO_APP);
    const home = process.env.HOME ?? "/root";
    await exec(["go", "build", "-trimpath", "-ldflags", "-s -w", "-o", path.join(dir, "server"), path.join(dir, "main.go")], {
      env: { CGO_ENABLED: "0", GO111MODULE: "off", HOME: home, GOCACHE: process.env.GOCACHE ?? path.join(home, ".cache", "go-build") },
      timeoutMs: 180_000,
    });
    return new Uint8Array(readFileSync(path.join(dir, "server")));
  })();
  return goBuild;
}

/** A tar of a busybox root with `files` added (executable when they are bytes or sit under `app/`). */
export async function busyboxTar(files: Record<string, string | Uint8Array>): Promise<Uint8Array> {
  const root = tempDir("ops-bbroot-");
  chmodSync(root, 0o755); // the image's / (mkdtemp makes it 0700: no other user could enter it)
  for (const d of ["bin", "tmp", "etc", "proc", "sys", "dev", "www", "app"]) mkdirSync(path.join(root, d), { recursive: true });
  chmodSync(path.join(root, "tmp"), 0o1777);
  copyFileSync("/bin/busybox", path.join(root, "bin", "busybox"));
  chmodSync(path.join(root, "bin", "busybox"), 0o755);
  for (const a of APPLETS) symlinkSync("busybox", path.join(root, "bin", a));
  writeFileSync(path.join(root, "etc", "passwd"), "root:x:0:0:root:/:/bin/sh\nnobody:x:65534:65534:nobody:/:/bin/sh\n");
  writeFileSync(path.join(root, "www", "index.html"), "hello from busybox\n");
  for (const [rel, body] of Object.entries(files)) {
    const p = path.join(root, rel);
    mkdirSync(path.dirname(p), { recursive: true });
    writeFileSync(p, body);
    if (typeof body !== "string" || rel.startsWith("app/")) chmodSync(p, 0o755);
  }
  const out = await exec(["sh", "-c", `tar --numeric-owner --owner=0 --group=0 -C ${root} -cf ${root}.tar . && echo ok`]);
  if (!out.stdout.includes("ok")) throw new Error("tar failed");
  return new Uint8Array(readFileSync(`${root}.tar`));
}

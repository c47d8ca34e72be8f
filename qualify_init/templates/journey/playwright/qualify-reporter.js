// A Playwright reporter that writes the qualify-journey v2 record (desktop-qualify, docs/app-contract.md §4).
//
// Written by `qualify init --journey playwright`; node's standard library only. Each test is one step:
//   passed                                   -> "allow"
//   passed, annotated qualify-refusal=CODE   -> "reject" with CODE (the test asserts the app refused with it);
//                                               qualify-errno and qualify-layer annotations add errno and layer
//   failed, timed out, interrupted, or a test expected to fail -> "error", its first error line as the detail
//   skipped                                  -> no step (a required step that was skipped is missing)
// The step id is the test's qualify-step annotation, else its title in lower case with dashes.
// The build the journey ran is the app's word: a test (or a beforeEach) adds the annotation
//   { type: "qualify-identity", description: JSON.stringify({ app_version, build_sha, platform }) }
// The record goes to the reporter option `record`, else $QUALIFY_RECORD (the producer sets it), written
// atomically (a temporary file in the same folder, then renamed). Once it is written the run's status is
// "passed": the record's error steps carry the failures to the verifier, which judges them against the policy
// (the contract's exit status says only that the journey ran to its end and wrote its record).
"use strict";

const fs = require("fs");
const path = require("path");

const STEP_ID = /^[a-z0-9][a-z0-9-]{0,63}$/;
const CODE = /^[A-Z][A-Z0-9_]{1,79}$/;
const ERRNO = /^E[A-Z0-9]{1,15}$/;
const LAYER = /^[a-z][a-z0-9-]{0,31}$/;
const SHA = /^([0-9a-f]{40}|[0-9a-f]{64})$/;
const PLATFORMS = new Set(["linux", "macos", "windows"]);
const MAX_STEPS = 256;
const MAX_DETAIL = 400;

function annotation(test, type) {
  const found = (test.annotations || []).filter((a) => a.type === type);
  return found.length ? found[found.length - 1].description : undefined;
}

function slug(text) {
  return String(text).toLowerCase().replace(/[^a-z0-9]+/g, "-").replace(/^-+|-+$/g, "");
}

function firstLine(result) {
  const errors = result.errors && result.errors.length ? result.errors : result.error ? [result.error] : [];
  const text = errors.map((e) => e.message || e.value || "").join("\n").replace(/\u001b\[[0-9;]*m/g, "");
  const line = text.split("\n").find((l) => l.trim()) || "no message";
  return `${result.status}: ${line.trim()}`;
}

class QualifyReporter {
  constructor(options = {}) {
    this.recordPath = options.record || process.env.QUALIFY_RECORD || "";
    this.order = [];
    this.results = new Map();
    this.identity = null;
  }

  printsToStdio() {
    return false;
  }

  onBegin(config, suite) {
    this.order = suite.allTests();
  }

  onTestEnd(test, result) {
    // A retried test ends once per attempt: the last attempt is what happened.
    this.results.set(test.id, { test, result });
    const identity = annotation(test, "qualify-identity");
    if (identity !== undefined) {
      this.identity = identity;
    }
  }

  step(test, result) {
    const id = annotation(test, "qualify-step") || slug(test.title);
    if (!STEP_ID.test(id)) {
      throw new Error(`test ${JSON.stringify(test.title)}: step id ${JSON.stringify(id)} is not one the record can ` +
                      "hold; name it with the annotation qualify-step");
    }
    const refusal = annotation(test, "qualify-refusal");
    if (refusal !== undefined && !CODE.test(refusal)) {
      throw new Error(`test ${JSON.stringify(test.title)}: qualify-refusal ${JSON.stringify(refusal)} is not a code`);
    }
    const errno = annotation(test, "qualify-errno");
    if (errno !== undefined && !ERRNO.test(errno)) {
      throw new Error(`test ${JSON.stringify(test.title)}: qualify-errno ${JSON.stringify(errno)} is not an errno`);
    }
    const layer = annotation(test, "qualify-layer");
    if (layer !== undefined && !LAYER.test(layer)) {
      throw new Error(`test ${JSON.stringify(test.title)}: qualify-layer ${JSON.stringify(layer)} is not a layer`);
    }
    if (!result) {
      return { id, observed: "error", code: null, errno: null, detail: "the test did not run to its end" };
    }
    if (result.status === "skipped") {
      return null;
    }
    const passed = result.status === "passed" && (test.expectedStatus || "passed") === "passed";
    if (passed && refusal !== undefined) {
      return { id, observed: "reject", code: refusal, errno: errno || null, layer: layer || null,
               detail: `refused with ${refusal}` };
    }
    if (passed) {
      return { id, observed: "allow", code: null, errno: null, detail: "passed" };
    }
    let detail = test.expectedStatus && test.expectedStatus !== "passed"
      ? `marked as expected to be ${test.expectedStatus}, and ${result.status}` : firstLine(result);
    if (refusal !== undefined) {
      detail = `expected refusal ${refusal} not observed: ${detail}`;
    }
    return { id, observed: "error", code: null, errno: null, detail: detail.slice(0, MAX_DETAIL) };
  }

  record() {
    if (this.identity === null) {
      throw new Error("no test said which build ran: add the qualify-identity annotation with the app's " +
                      "{app_version, build_sha, platform}");
    }
    let who;
    try {
      who = JSON.parse(this.identity);
    } catch (error) {
      who = null;
    }
    if (!who || typeof who.app_version !== "string" || !who.app_version || !SHA.test(who.build_sha || "") ||
        !PLATFORMS.has(who.platform)) {
      throw new Error(`the qualify-identity annotation ${JSON.stringify(this.identity).slice(0, 200)} does not ` +
                      "name an app_version, a build_sha and a platform");
    }
    const steps = [];
    for (const test of this.order) {
      const ran = this.results.get(test.id);
      const step = this.step(test, ran && ran.result);
      if (step) {
        steps.push(step);
      }
    }
    if (steps.length > MAX_STEPS) {
      throw new Error(`${steps.length} steps; a journey record holds at most ${MAX_STEPS}`);
    }
    return { kind: "qualify-journey", version: 2, app_version: who.app_version.slice(0, 256),
             build_sha: who.build_sha, platform: who.platform, steps };
  }

  onEnd(result) {
    if (!this.recordPath) {
      console.error("qualify-reporter: no record path (reporter option record, or QUALIFY_RECORD)");
      return { status: "failed" };
    }
    if (result && (result.status === "interrupted" || result.status === "timedout")) {
      console.error(`qualify-reporter: the run ended ${result.status}; no record claims a journey`);
      return { status: "failed" };
    }
    let data;
    try {
      data = JSON.stringify(this.record(), null, 2) + "\n";
    } catch (error) {
      console.error(`qualify-reporter: no record written: ${error.message}`);
      return { status: "failed" };
    }
    const target = path.resolve(this.recordPath);
    const temporary = path.join(path.dirname(target), `.${path.basename(target)}.${process.pid}.tmp`);
    try {
      fs.writeFileSync(temporary, data, { encoding: "utf-8", flag: "wx", mode: 0o644 });
      fs.renameSync(temporary, target);
    } catch (error) {
      fs.rmSync(temporary, { force: true });
      console.error(`qualify-reporter: no record written: ${error.message}`);
      return { status: "failed" };
    }
    console.log(`qualify-reporter: wrote ${target}`);
    return { status: "passed" };
  }
}

module.exports = QualifyReporter;

// Feeds qualify-reporter.js a recorded sequence of Playwright reporter events, as Playwright would call it.
//   node driver.js REPORTER EVENTS.json RECORD
// Prints what onEnd returned, as one JSON line. Node's standard library only (no npm, no network).
"use strict";

const fs = require("fs");

const [reporterPath, eventsPath, recordPath] = process.argv.slice(2);
const Reporter = require(reporterPath);
const recorded = JSON.parse(fs.readFileSync(eventsPath, "utf-8"));

// Playwright's TestCase: id, title, expectedStatus, and the annotations array tests push to as they run.
const tests = new Map(recorded.tests.map((t) => [t.id, { ...t, annotations: [...(t.annotations || [])] }]));
const suite = { allTests: () => [...tests.values()] };
const reporter = new Reporter(recordPath === "-" ? {} : { record: recordPath });
reporter.onBegin({ workers: 1 }, suite);
for (const event of recorded.events) {
  const test = tests.get(event.test);
  test.annotations.push(...(event.annotations || []));
  reporter.onTestEnd(test, event.result);
}
const ended = reporter.onEnd(recorded.end);
process.stdout.write(JSON.stringify(ended === undefined ? null : ended) + "\n");

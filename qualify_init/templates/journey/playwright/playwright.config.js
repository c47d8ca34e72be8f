// The journey's Playwright configuration (written by `qualify init --journey playwright`).
// The producer runs `npx playwright test --config journey/playwright.config.js` from a fresh export of the
// gated commit, with QUALIFY_EXECUTABLE (the installed app) and QUALIFY_RECORD (where the record goes).
// One worker and no retries: each test is one journey step, walked once, in order.
const path = require("path");

module.exports = {
  testDir: __dirname,
  testMatch: "*.spec.js",
  workers: 1,
  retries: 0,
  reporter: [["list"], [path.join(__dirname, "qualify-reporter.js")]],
};

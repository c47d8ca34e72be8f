// @@NAME@@'s journey, driven through Playwright (written by `qualify init --journey playwright`).
// Each test is one journey step; the policy's [journey.steps] says what each must show. A test annotated
// qualify-refusal passes only when the app refused with that code. Launching an Electron app:
//   const app = await _electron.launch({ executablePath: process.env.QUALIFY_EXECUTABLE });
// (add args: ["--no-sandbox"] where the runner is root), then drive app.firstWindow().
const { test, expect, _electron } = require("@playwright/test");

let app;

test.beforeAll(async () => {
  app = await _electron.launch({ executablePath: process.env.QUALIFY_EXECUTABLE });
});

test.afterAll(async () => {
  await app?.close();
});

test.beforeEach(async () => {
  // The build the journey runs against, in the app's own words: here a preload bridge the app exposes
  // (window.appInfo, reporting the build_sha its build embedded from QUALIFY_BUILD_INFO).
  const window = await app.firstWindow();
  const who = await window.evaluate(() => window.appInfo);
  test.info().annotations.push({ type: "qualify-identity", description: JSON.stringify(who) });
});

test("app starts", async () => {
  const window = await app.firstWindow();
  await expect(window.locator("body")).toBeVisible();
});

// A refusal the policy requires, e.g. `open-outside-refused = { expect = "reject", code = "@@PREFIX@@PATH_OUTSIDE" }`:
// test("open outside refused", { annotation: { type: "qualify-refusal", description: "@@PREFIX@@PATH_OUTSIDE" } },
//   async () => { /* ask the app to open ../outside.txt and expect its refusal with that code */ });

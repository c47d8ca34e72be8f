// sigstore-js verifies the offline GitHub chain's statement bundles (run by `nox -s interop`).
//
// usage: node verify.mjs --trusted-root trusted_root.json --identity signer-identity.json
//            [--foreign-root another_trusted_root.json] BUNDLE...
//
// Each bundle must verify under the given trusted root (Fulcio chain, embedded SCT, Rekor entry with its
// inclusion proof / signed entry timestamp, DSSE signature) for exactly its identity in signer-identity.json
// ({issuer, subjectAlternativeNames: {FILE NAME: SAN}}: each platform job and the aggregate sign with
// identities of their own); and each must be refused for other identities, with its DSSE payload
// changed, and (with --foreign-root) under another trusted root. sigstore-js treats
// the policy's subjectAlternativeName as a regular expression, so it is escaped and anchored here, and the
// identity sigstore-js returns is compared again byte for byte.
import { readFileSync } from 'node:fs';
import { createRequire } from 'node:module';
import { basename } from 'node:path';

const require = createRequire(import.meta.url);
const { Verifier, toSignedEntity, toTrustMaterial } = require('@sigstore/verify');
const { bundleFromJSON } = require('@sigstore/bundle');
const { TrustedRoot } = require('@sigstore/protobuf-specs');

const readJSON = (path) => JSON.parse(readFileSync(path, 'utf8'));
const versions = ['verify', 'bundle', 'core', 'protobuf-specs']
  .map((name) => `@sigstore/${name}@${readJSON(new URL(`./node_modules/@sigstore/${name}/package.json`,
    import.meta.url)).version}`);

function parseArgs(argv) {
  const options = { bundles: [] };
  for (let i = 0; i < argv.length; i++) {
    if (argv[i] === '--trusted-root') options.trustedRoot = argv[++i];
    else if (argv[i] === '--identity') options.identity = argv[++i];
    else if (argv[i] === '--foreign-root') options.foreignRoot = argv[++i];
    else options.bundles.push(argv[i]);
  }
  if (!options.trustedRoot || !options.identity || options.bundles.length === 0) {
    console.error('usage: node verify.mjs --trusted-root FILE --identity FILE BUNDLE...');
    process.exit(2);
  }
  return options;
}

const exactly = (text) => `^${text.replace(/[.*+?^${}()|[\]\\/]/g, '\\$&')}$`;

const options = parseArgs(process.argv.slice(2));
const { subjectAlternativeNames: sans, issuer } = readJSON(options.identity);
const trustMaterial = toTrustMaterial(TrustedRoot.fromJSON(readJSON(options.trustedRoot)));
const thresholds = { tlogThreshold: 1, ctlogThreshold: 1 };
const verifier = new Verifier(trustMaterial, thresholds);
const foreign = options.foreignRoot === undefined ? undefined
  : new Verifier(toTrustMaterial(TrustedRoot.fromJSON(readJSON(options.foreignRoot))), thresholds);
const policy = (who, from) => ({ subjectAlternativeName: exactly(who), extensions: { issuer: from } });

// Identities that must be refused: another workflow, a longer SAN that an unanchored regex would accept,
// a shorter one, another repository, a tag ref, another OIDC issuer.
// Every other job's identity too: no job's bundle passes for another's (one signer per platform).
const othersFor = (san) => [
  ['another workflow', policy(san.replace(/\/[^/@]+@/, san.includes('/release.yml@') ? '/qualify.yml@'
    : '/release.yml@'), issuer)],
  ['SAN with a suffix', policy(`${san}-evil`, issuer)],
  ['SAN prefix only', policy(san.slice(0, san.lastIndexOf('@')), issuer)],
  ['another repository', policy(san.replace(/^(https:\/\/github\.com\/[^/]+\/[^/]+)/, '$1-evil'), issuer)],
  ['a tag ref', policy(san.replace(/@.*$/, '@refs/tags/v1.0'), issuer)],
  ['another issuer', policy(san, 'https://accounts.google.com')],
  ...Object.entries(sans).filter(([, other]) => other !== san)
    .map(([file, other]) => [`the signer of ${file}`, policy(other, issuer)]),
];

console.log(`sigstore-js ${versions.join(' ')} on node ${process.version}`);
console.log(`issuer ${issuer}; identities: ${JSON.stringify(sans)}`);
let failures = 0;
for (const path of options.bundles) {
  const name = basename(path);
  const san = sans?.[name];
  if (typeof san !== 'string') {
    failures++;
    console.log(`FAILED   ${name}: signer-identity.json names no identity for it`);
    continue;
  }
  const others = othersFor(san);
  const bundle = bundleFromJSON(readJSON(path));
  const entity = toSignedEntity(bundle);
  try {
    const signer = verifier.verify(entity, policy(san, issuer));
    const got = signer.identity ?? {};
    if (got.subjectAlternativeName !== san || got.extensions?.issuer !== issuer) {
      throw new Error(`returned identity ${JSON.stringify(got)} is not the expected one`);
    }
    const entry = bundle.verificationMaterial.tlogEntries[0];
    console.log(`VERIFIED ${name}: ${bundle.mediaType}, DSSE ${bundle.content.dsseEnvelope?.payloadType}, ` +
      `Rekor ${entry.kindVersion.kind}/${entry.kindVersion.version} index ${entry.logIndex}, ` +
      `SAN ${got.subjectAlternativeName}, issuer ${got.extensions.issuer}`);
  } catch (error) {
    failures++;
    console.log(`FAILED   ${name}: ${error.code ?? error.name}: ${error.message}`);
    continue;
  }
  for (const [label, other] of others) {
    try {
      verifier.verify(entity, other);
      failures++;
      console.log(`FAILED   ${name}: accepted for ${label} (${other.subjectAlternativeName}, ${other.extensions.issuer})`);
    } catch (error) {
      if (error.code !== 'UNTRUSTED_SIGNER_ERROR') {
        failures++;
        console.log(`FAILED   ${name}: ${label} refused for the wrong reason: ${error.code}: ${error.message}`);
      } else {
        console.log(`refused  ${name} for ${label}: ${error.message}`);
      }
    }
  }
  // Not an identity question: a changed payload, another root. Any refusal will do; acceptance is a failure.
  const tampered = structuredClone(readJSON(path));
  const payload = JSON.parse(Buffer.from(tampered.dsseEnvelope.payload, 'base64'));
  payload.predicateType = `${payload.predicateType}#changed`;
  tampered.dsseEnvelope.payload = Buffer.from(JSON.stringify(payload)).toString('base64');
  const refusals = [['a changed payload', verifier, toSignedEntity(bundleFromJSON(tampered))]];
  if (foreign !== undefined) refusals.push([`the foreign root ${basename(options.foreignRoot)}`, foreign, entity]);
  for (const [label, which, what] of refusals) {
    try {
      which.verify(what, policy(san, issuer));
      failures++;
      console.log(`FAILED   ${name}: accepted with ${label}`);
    } catch (error) {
      console.log(`refused  ${name} with ${label}: ${error.code ?? error.name}: ${error.message}`);
    }
  }
}
console.log(failures === 0
  ? `sigstore-js: all ${options.bundles.length} bundles verified for exactly their own job's identity`
  : `sigstore-js: ${failures} failure(s)`);
process.exit(failures === 0 ? 0 : 1);

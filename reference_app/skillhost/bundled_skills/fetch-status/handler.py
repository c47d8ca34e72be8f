"""Bundled skill: fetch an allow-listed HTTPS URL. Egress broker only."""


def run(ports, args):
    res = ports.https.get(str(args.get("url", ""))[:2000])
    return {"status": res["status"], "bytes": len(res["body"]), "redirects": res["redirects"]}

"""Bundled skill: report the current time. Host ports only, no raw modules."""


def run(ports, args):
    now = ports.time.now()
    ports.logger.info("clock skill read the time")
    label = str(args.get("label", "now"))[:40]
    return {"label": label, "now": now}

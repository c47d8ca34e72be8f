"""Bundled skill: report the host platform. Environment broker (one logical key) only."""


def run(ports, args):
    return {"platform": ports.env.get("host-platform")[:40]}

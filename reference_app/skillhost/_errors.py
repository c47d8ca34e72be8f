"""Error type carrying a stable ``CC_SKILL_*`` code."""


class SkillError(Exception):
    def __init__(self, code: str, message: str = ""):
        super().__init__(f"{code}: {message}")
        self.code = code
        self.message = message[:300]

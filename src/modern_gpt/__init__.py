"""modern-gpt: a 2017 GPT rebuilt as the modern design, one measured change at a time."""

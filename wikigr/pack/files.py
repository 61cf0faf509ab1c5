"""The names of a pack's files, relative to its folder (docs/pack-format.md)."""

STORE_FILE = "pack.db"
MANIFEST_FILE = "manifest.json"
URLS_FILE = "urls.txt"
CRAWL_FILE = "crawl.json"  # a crawled pack's pages and their states
SKILL_FILE = "skill.md"
CONFIG_FILE = "kg_config.json"
QUESTIONS_FILE = "eval/questions.jsonl"
RESULTS_DIR = "eval/results"

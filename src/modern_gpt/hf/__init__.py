"""The Hugging Face bridge: reading any config.json, and exporting or importing weights
(GPT-2, Llama, Mistral, Qwen3)."""

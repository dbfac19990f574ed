"""The Hugging Face bridge: reading any config.json, and exporting or importing weights
(GPT-2, Llama, Mistral, Qwen3).

Reading (pure Python): config_json (the file), model_types, arch (`normalise`: the one reader), layers, moe_mla;
then counts, meta, explain and import_config. Export and import (torch, transformers when called): config_map
(ModelConfig and HF config), weights (state dicts, key maps), models (`to_hf`, `from_hf`) and folder (`export`,
`import_folder`).
"""

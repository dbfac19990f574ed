"""What each config.json field means, the `model:` flag of ours it corresponds to, and which fields change the counts.

`FIELDS`: field -> (meaning, our flag or NM). `COUNTS`: the fields that change the parameter count or the KV cache,
by the feature they belong to; a family's arithmetic models some features (model_types.MODEL_TYPES[...]["models"]),
and a field of a feature it does not model makes `normalise` leave the figures it changes out rather than print them
wrong.
Nothing here imports transformers; the meanings were checked against transformers' configuration and modeling code.
"""

from __future__ import annotations

NM = "not modelled here"

# field → (what it means, the `model:` flag of ours it corresponds to, or NM)
FIELDS: dict[str, tuple[str, str]] = {
    # identity
    "architectures": ("the class transformers builds from this file", NM),
    "model_type": ("the family: picks the code (and the defaults of fields left out)", NM),
    "_name_or_path": ("where the file was loaded from when it was saved", NM),
    "auto_map": ("custom code classes to load instead of transformers' own", NM),
    "transformers_version": ("the transformers version that wrote the file", NM),
    "torch_dtype": ("the dtype the weights are stored in (v4 name)", NM),
    "dtype": ("the dtype the weights are stored in (v5 name)", NM),
    # shape
    "vocab_size": ("number of distinct tokens: rows of the embedding table", "vocab_size"),
    "hidden_size": ("residual width: the size of every token's vector", "n_embd"),
    "n_embd": ("residual width (GPT-2 name)", "n_embd"),
    "num_hidden_layers": ("transformer blocks", "n_layer"),
    "n_layer": ("transformer blocks (GPT-2 name)", "n_layer"),
    "num_attention_heads": ("query heads per layer", "n_head"),
    "n_head": ("attention heads per layer (GPT-2 name)", "n_head"),
    "num_key_value_heads": ("key/value heads per layer; fewer than query heads = grouped-query attention",
                            "n_kv_head"),
    "head_dim": ("per-head width, when it is not hidden_size / num_attention_heads", "head_dim"),
    "intermediate_size": ("the MLP's hidden width", "mlp_hidden"),
    "n_inner": ("the MLP's hidden width (GPT-2 name; null = 4 × n_embd)", "mlp_hidden"),
    "max_position_embeddings": ("longest context the model was built or extended for", "block_size"),
    "n_positions": ("rows of the learned position table = longest context (GPT-2 name)", "block_size"),
    "n_ctx": ("context length (old GPT-2 name, same as n_positions)", "block_size"),
    # activation and MLP
    "hidden_act": ("the MLP's activation; 'silu' with gate/up/down matrices = SwiGLU", "mlp"),
    "hidden_activation": ("the MLP's activation (Gemma name); gelu_pytorch_tanh gated = GeGLU", "mlp"),
    "activation_function": ("the MLP's activation (GPT-2 name)", "mlp"),
    "mlp_bias": ("biases on the MLP's matrices", "bias"),
    # norms
    "rms_norm_eps": ("epsilon of RMSNorm (the model normalises with RMSNorm)", "norm_eps"),
    "layer_norm_epsilon": ("epsilon of LayerNorm (the model normalises with LayerNorm)", "norm_eps"),
    "layer_norm_eps": ("epsilon of LayerNorm", "norm_eps"),
    # attention
    "attention_bias": ("biases on the attention projections", "bias"),
    "attention_dropout": ("dropout on attention weights while training", "dropout"),
    "attn_pdrop": ("dropout on attention weights (GPT-2 name)", "dropout"),
    "resid_pdrop": ("dropout on residual branches", "dropout"),
    "embd_pdrop": ("dropout on the embeddings", "dropout"),
    "sliding_window": ("tokens a sliding-window layer attends to, its own included (and keeps in its KV cache)",
                       "attn_window"),
    "sliding_window_size": ("the sliding window (older Gemma 2 name)", "attn_window"),
    "use_sliding_window": ("whether sliding_window is used at all (Qwen2/3); false = attn_window 0", "attn_window"),
    "max_window_layers": ("Qwen: layers from this index on use the sliding window, if enabled (when layer_types is "
                          "not given)", NM),
    "layer_types": ("per layer: full_attention or sliding_attention", "global_every"),
    "sliding_window_pattern": ("every Nth layer is full attention, the others slide (Gemma 3)", "global_every"),
    "_sliding_window_pattern": ("every Nth layer is full attention (Gemma 3, as saved by newer versions)",
                                "global_every"),
    "query_pre_attn_scalar": ("queries are scaled by 1/sqrt(this) instead of 1/sqrt(head_dim)", NM),
    "attn_logit_softcapping": ("attention scores squashed by cap·tanh(score/cap)", NM),
    "final_logit_softcapping": ("output logits squashed by cap·tanh(logit/cap); null = off", "logit_softcap"),
    "cache_implementation": ("which KV-cache class generation uses by default", NM),
    "use_cache": ("keep past keys and values while generating", NM),
    "scale_attn_weights": ("divide attention scores by sqrt(head_dim) (GPT-2)", NM),
    "scale_attn_by_inverse_layer_idx": ("GPT-2 option: scale attention by 1/layer index", NM),
    "reorder_and_upcast_attn": ("GPT-2 option: compute attention in fp32", NM),
    "use_bidirectional_attention": ("attend both ways (embedding variants), not causal", NM),
    # positions
    "rope_theta": ("RoPE's base: larger = slower rotations, longer wavelengths", "rope_base"),
    "rope_local_base_freq": ("RoPE base of the sliding-window layers (Gemma 3; rope_theta is the global one)",
                             NM),
    "rope_scaling": ("how RoPE is stretched past the training length (v4 name)", NM),
    "rope_parameters": ("RoPE's base and scaling, per layer type when nested (v5 name)", "rope_base"),
    "partial_rotary_factor": ("fraction of each head's dimensions RoPE rotates", NM),
    "original_max_position_embeddings": ("the context length before RoPE scaling extended it", NM),
    # embeddings and output
    "tie_word_embeddings": ("whether the output head reuses the embedding table (false: a separate lm_head)",
                            "tie_embeddings"),
    "initializer_range": ("std of the random initial weights", NM),
    "pretraining_tp": ("tensor-parallel degree used in pretraining (Llama; 1 = exact)", NM),
    # tokens
    "bos_token_id": ("id of the beginning-of-sequence token", NM),
    "eos_token_id": ("id(s) of the end-of-sequence token", NM),
    "pad_token_id": ("id of the padding token", NM),
    # GPT-2's classification head
    "summary_type": ("GPT-2's sequence-summary head (classification), unused for generation", NM),
    "summary_use_proj": ("GPT-2's sequence-summary head: project the summary", NM),
    "summary_activation": ("GPT-2's sequence-summary head: activation", NM),
    "summary_proj_to_labels": ("GPT-2's sequence-summary head: project to the labels", NM),
    "summary_first_dropout": ("GPT-2's sequence-summary head: dropout", NM),
    "task_specific_params": ("generation defaults per task", NM),
    # multimodal
    "text_config": ("the language model's own config (fields below, prefixed)", NM),
    "vision_config": ("the image encoder's config (a vision transformer)", NM),
    "mm_tokens_per_image": ("tokens each image becomes in the text sequence", NM),
    "image_token_index": ("id of the image placeholder token", NM),
    "boi_token_index": ("id of the begin-of-image token", NM),
    "eoi_token_index": ("id of the end-of-image token", NM),
    # mixture of experts
    "num_local_experts": ("experts (MLPs) in each mixture-of-experts layer (Mixtral, gpt-oss, Llama 4 name)", NM),
    "num_experts": ("experts in each mixture-of-experts layer (Qwen MoE name)", NM),
    "n_routed_experts": ("routed experts in each mixture-of-experts layer (DeepSeek name)", NM),
    "num_experts_per_tok": ("experts the router runs for each token (the top k)", NM),
    "experts_per_token": ("experts run for each token (gpt-oss's second name for num_experts_per_tok)", NM),
    "n_shared_experts": ("experts every token runs besides the routed ones (DeepSeek)", NM),
    "moe_intermediate_size": ("hidden width of each expert's MLP", NM),
    "shared_expert_intermediate_size": ("hidden width of the shared expert's MLP (Qwen2-MoE)", NM),
    "intermediate_size_mlp": ("hidden width of the MLP in the layers that are not MoE (Llama 4)", NM),
    "first_k_dense_replace": ("the first k layers keep a dense MLP, MoE from layer k on (DeepSeek)", NM),
    "moe_layer_freq": ("from first_k_dense_replace on, every n-th layer is MoE (DeepSeek)", NM),
    "decoder_sparse_step": ("every n-th layer is MoE (Qwen MoE)", NM),
    "mlp_only_layers": ("layers that keep a dense MLP whatever decoder_sparse_step says (Qwen MoE)", NM),
    "interleave_moe_layer_step": ("every n-th layer is MoE when moe_layers is not given (Llama 4)", NM),
    "moe_layers": ("indices of the MoE layers (Llama 4; overrides interleave_moe_layer_step)", NM),
    "norm_topk_prob": ("the chosen experts' router weights are renormalised to sum to 1", NM),
    "router_aux_loss_coef": ("weight of the load-balancing loss while training", NM),
    "output_router_logits": ("return the router's scores (to add the balancing loss while training)", NM),
    "router_jitter_noise": ("noise on the router's input while training", NM),
    "routed_scaling_factor": ("the routed experts' summed output is multiplied by this (DeepSeek)", NM),
    "scoring_func": ("how the router turns logits into weights: softmax or sigmoid (DeepSeek)", NM),
    "topk_method": ("how experts are picked: greedy top-k, group-limited, or noaux_tc (bias-corrected, DeepSeek-V3)",
                    NM),
    "n_group": ("the routed experts are split into this many groups (DeepSeek routing)", NM),
    "topk_group": ("a token picks its experts from at most this many groups (bounds cross-device traffic)", NM),
    "aux_loss_alpha": ("weight of the load-balancing loss (DeepSeek)", NM),
    "seq_aux": ("balance the experts' load per sequence, not per batch (DeepSeek)", NM),
    "ep_size": ("expert-parallel degree the checkpoint was saved with (DeepSeek; 1 = all experts in one file set)", NM),
    "num_nextn_predict_layers": ("extra multi-token-prediction modules trained to predict a further token (DeepSeek-V3);"
                                 " transformers does not build them, so they are not counted", NM),
    "initial_context_length": ("the context gpt-oss was pretrained at, before YaRN extended it", NM),
    "swiglu_limit": ("gpt-oss clamps the MLP's gate and up projections at this value", NM),
    # multi-head latent attention (DeepSeek-V2/V3, Kimi K2)
    "q_lora_rank": ("queries pass through a bottleneck of this rank (down, normed, up to the heads); null = one"
                    " plain query projection", NM),
    "kv_lora_rank": ("keys and values are rebuilt from one latent vector of this size per token, and the latent, not"
                     " the heads' keys and values, is cached (multi-head latent attention)", NM),
    "qk_nope_head_dim": ("per-head query/key dimensions without RoPE (rebuilt from the latent)", NM),
    "qk_rope_head_dim": ("per-head query/key dimensions that carry RoPE; the key's are one head shared by all heads,"
                         " cached beside the latent", NM),
    "v_head_dim": ("per-head value width", NM),
    "rope_interleave": ("RoPE rotates adjacent pairs (x0,x1),(x2,x3) instead of the two halves of each head", NM),
    # hybrid layers
    "no_rope_layers": ("per layer: 1 = the layer uses RoPE, 0 = no position information at all (NoPE)", NM),
    "no_rope_layer_interval": ("every n-th layer is NoPE when no_rope_layers is not given", NM),
    "attention_chunk_size": ("chunked layers attend only within blocks of this many tokens, so their KV cache holds at"
                             " most that many (Llama 4)", NM),
    "use_qk_norm": ("L2-normalise queries and keys (Llama 4: on the RoPE layers, without weights)", NM),
    "attn_temperature_tuning": ("NoPE layers scale their queries up as positions grow past floor_scale (Llama 4)", NM),
    "floor_scale": ("positions per step of the attention temperature tuning (Llama 4)", NM),
    "attn_scale": ("strength of the attention temperature tuning (Llama 4)", NM),
    # storage
    "quantization_config": ("how the stored weights are quantised: the method, the number format, the block size", NM),
}

# The fields that change the parameter count or the KV cache, by feature. A family models a feature when its
# arithmetic reads these fields (model_types.MODEL_TYPES[...]["models"]); a field of another feature, set in the file,
# leaves out the figures it changes.
COUNTS: dict[str, frozenset[str]] = {
    "experts": frozenset({"num_local_experts", "num_experts", "n_routed_experts", "num_experts_per_tok",
                          "experts_per_token", "n_shared_experts", "moe_intermediate_size",
                          "shared_expert_intermediate_size", "intermediate_size_mlp", "first_k_dense_replace",
                          "moe_layer_freq", "decoder_sparse_step", "mlp_only_layers", "interleave_moe_layer_step",
                          "moe_layers"}),
    "latent": frozenset({"q_lora_rank", "kv_lora_rank", "qk_nope_head_dim", "qk_rope_head_dim", "v_head_dim"}),
    "chunks": frozenset({"attention_chunk_size"}),
    "nope": frozenset({"no_rope_layers", "no_rope_layer_interval"}),
}
# the figures a feature changes: parameters (the counts, active ones and the weights' bytes), kv (the KV cache),
# kv_seq (the KV cache per sequence: a cap on what a layer keeps)
CHANGES: dict[str, tuple[str, ...]] = {"experts": ("parameters",), "latent": ("parameters", "kv"),
                                       "chunks": ("kv_seq",), "nope": ()}
FIGURES = {"parameters": "the parameter counts and the weights' bytes", "kv": "the KV cache",
           "kv_seq": "the KV cache per sequence"}
# an unknown field whose name holds one of these may change the counts: substring -> the figures it may change
SUSPICIOUS: dict[str, tuple[str, ...]] = {
    "expert": ("parameters",), "moe": ("parameters",), "router": ("parameters",),
    "lora": ("parameters", "kv"), "latent": ("parameters", "kv"), "ssm": ("parameters", "kv"),
    "mamba": ("parameters", "kv"), "linear_attn": ("parameters", "kv"),
    "window": ("kv_seq",), "chunk": ("kv_seq",),
}
LAYER_TYPES = ("full_attention", "sliding_attention", "chunked_attention")     # the layer_types values modelled

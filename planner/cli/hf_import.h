/* hf_import.h - a Hugging Face config.json as a zb model (zbplan import,
 * and zbplan CONFIG.json, which imports and plans in one go).
 *
 * The JSON is read by libyaml (JSON's syntax is YAML's flow syntax), so it
 * is a real parser with line and column marks, not a hand-written one.
 * Architectures (the first entry of "architectures", else "model_type"):
 *   LlamaForCausalLM, MistralForCausalLM, Qwen2ForCausalLM (arch llama;
 *   Qwen2 with qkv_bias):
 *     hidden_size, intermediate_size, num_attention_heads,
 *     num_key_value_heads (default num_attention_heads), num_hidden_layers,
 *     vocab_size, max_position_embeddings, rope_theta (default 10000),
 *     tie_word_embeddings (default false), head_dim (must be hidden/heads)
 *   GPT2LMHeadModel (arch gpt2): n_embd, n_layer, n_head, n_positions (or
 *     n_ctx), vocab_size, n_inner (null: 4 n_embd)
 * The training and cluster sections get documented defaults
 * (docs/zbplan.md, "Importing a Hugging Face config"); --set changes any
 * key before the model is checked. Every problem is ZB_EINPUT with one line
 * "config.json:line:col: ..." naming the key (a missing one, an unknown
 * architecture, a value out of range).
 */
#ifndef ZB_HF_IMPORT_H
#define ZB_HF_IMPORT_H

#include <stdbool.h>
#include <stddef.h>

#include "common/zb_error.h"
#include "common/zb_model.h"
#include "common/zb_override.h"

/* Does path name a JSON file (ends in .json, any case)? */
bool zb_hf_is_json(const char *path);

/* The zb model file's text for the config at path: a malloc'd string the
 * caller frees (*text NULL on failure). */
zb_status zb_hf_model_text(const char *path, char **text, zb_err *err);

/* Import the config at path, apply sets (may be NULL) and validate: out is
 * the model, as zb_model_load_set gives it for a model file. */
zb_status zb_hf_import(const char *path, const zb_overrides *sets, zb_model *out,
                       zb_err *err);

/* zbplan import CONFIG.json [-o MODEL.yaml] [--set KEY=VALUE]...: writes
 * the model file (every key explicit); returns the exit status. */
int zb_import_cmd(int argc, char **argv);

#endif

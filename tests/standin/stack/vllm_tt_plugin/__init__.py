"""Stand-in for tenstorrent/vllm branch dev (b4dd0fa695bfe85a1f83068bb30dae4220e8334a),
plugins/vllm-tt-plugin/src/vllm_tt_plugin (tests only): the persistent
batch, the model runner and the async decode controller, reduced to what
reaches the generator."""

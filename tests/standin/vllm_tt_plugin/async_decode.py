"""Stand-in for vllm_tt_plugin/async_decode.py: TTAsyncDecodeController.submit_decode,
through which every decode reaches the model (the kit reads the batch's
request ids here)."""


class TTAsyncDecodeController:
    def __init__(self, runner):
        self.runner = runner

    def submit_decode(self, model_input, *, read_from_device, async_read=False):
        runner = self.runner
        kwargs = {
            "tokens": model_input.input_tokens,
            "page_table": None,
            "kv_cache": None,
            "start_pos": model_input.input_positions,
        }
        if model_input.perform_device_sampling:
            kwargs["sampling_params"] = model_input.tt_sampling_params
            kwargs["reset_batch"] = model_input.reset_batch
            if model_input.slot_remap is not None:
                kwargs["slot_remap"] = model_input.slot_remap
        runner.model._standin_rows = runner.input_batch.req_ids
        return runner.model.decode_forward(**kwargs, enable_trace=True,
                                           read_from_device=read_from_device)

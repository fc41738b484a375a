import logging
logging.basicConfig(level=logging.INFO, format="%(levelname)s %(asctime)s [generator.py:1930] %(message)s", datefmt="%m-%d %H:%M:%S")
logging.info("QWEN36_MERGE_BATCH_GUARD engaged: merge requires the buffer's active-slot pattern to match the batch")
logging.info('MERGE_AUDIT {"ev":"merge","step":41,"reset_batch":true,"host_pos":[22,25,27,25,22,25,27,27],"dev_pos":[29,-1,-1,-1,-1,-1,-1,28]}')

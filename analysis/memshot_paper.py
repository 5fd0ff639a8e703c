"""The MemShot paper's own numbers (Tables 1, 2 and 4), *quoted, not measured*.

The external text-memory systems (LightMem, MemOS, MemoryOS, EverMemOS) and MemOCR are not run
by this project unless an adapter is plugged in (``vismem.memory.dialogue.memories``); their rows stay
in the report with the paper's numbers, every one marked ``quoted``, so a reader can set a
measured MemShot / Text RAG row beside them. Transcribed from the paper's HTML tables
(arXiv 2606.28338v1): Acc and F1 in percent, construction latency in seconds (Table 1 only).
"""

from __future__ import annotations

import io

import polars as pl

#: Mark carried by every quoted row (``source`` column).
QUOTED = "quoted (paper)"

#: table, dataset, backbone, method, latency_s, category, acc, f1 (percent).
_CSV = """table,dataset,backbone,method,latency_s,category,acc,f1
Table 1,locomo,Qwen3-32B (LLM),Text RAG,2.10,multi-hop,59.22,27.41
Table 1,locomo,Qwen3-32B (LLM),Text RAG,2.10,temporal,67.91,35.81
Table 1,locomo,Qwen3-32B (LLM),Text RAG,2.10,open-domain,37.50,16.80
Table 1,locomo,Qwen3-32B (LLM),Text RAG,2.10,single-hop,78.00,36.81
Table 1,locomo,Qwen3-32B (LLM),Text RAG,2.10,Overall,69.94,33.63
Table 1,locomo,Qwen3-32B (LLM),LightMem,814.34,multi-hop,60.28,37.75
Table 1,locomo,Qwen3-32B (LLM),LightMem,814.34,temporal,55.14,31.77
Table 1,locomo,Qwen3-32B (LLM),LightMem,814.34,open-domain,51.04,21.76
Table 1,locomo,Qwen3-32B (LLM),LightMem,814.34,single-hop,80.02,49.64
Table 1,locomo,Qwen3-32B (LLM),LightMem,814.34,Overall,69.42,42.00
Table 1,locomo,Qwen3-32B (LLM),MemOS,628.76,multi-hop,69.86,41.31
Table 1,locomo,Qwen3-32B (LLM),MemOS,628.76,temporal,65.11,32.99
Table 1,locomo,Qwen3-32B (LLM),MemOS,628.76,open-domain,54.17,29.94
Table 1,locomo,Qwen3-32B (LLM),MemOS,628.76,single-hop,85.26,57.66
Table 1,locomo,Qwen3-32B (LLM),MemOS,628.76,Overall,76.30,47.79
Table 1,locomo,Qwen3-32B (LLM),MemoryOS,2594.09,multi-hop,53.55,35.65
Table 1,locomo,Qwen3-32B (LLM),MemoryOS,2594.09,temporal,29.91,39.53
Table 1,locomo,Qwen3-32B (LLM),MemoryOS,2594.09,open-domain,51.04,25.72
Table 1,locomo,Qwen3-32B (LLM),MemoryOS,2594.09,single-hop,74.44,54.18
Table 1,locomo,Qwen3-32B (LLM),MemoryOS,2594.09,Overall,59.87,45.96
Table 1,locomo,Qwen3-32B (LLM),EverMemOS,1535.98,multi-hop,58.87,12.62
Table 1,locomo,Qwen3-32B (LLM),EverMemOS,1535.98,temporal,62.31,20.20
Table 1,locomo,Qwen3-32B (LLM),EverMemOS,1535.98,open-domain,51.04,9.30
Table 1,locomo,Qwen3-32B (LLM),EverMemOS,1535.98,single-hop,73.01,16.94
Table 1,locomo,Qwen3-32B (LLM),EverMemOS,1535.98,Overall,66.82,16.35
Table 1,locomo,Qwen3-VL-2B-Instruct,Text RAG,2.10,multi-hop,47.16,31.31
Table 1,locomo,Qwen3-VL-2B-Instruct,Text RAG,2.10,temporal,28.66,39.18
Table 1,locomo,Qwen3-VL-2B-Instruct,Text RAG,2.10,open-domain,36.46,14.56
Table 1,locomo,Qwen3-VL-2B-Instruct,Text RAG,2.10,single-hop,69.44,51.08
Table 1,locomo,Qwen3-VL-2B-Instruct,Text RAG,2.10,Overall,54.81,42.70
Table 1,locomo,Qwen3-VL-2B-Instruct,LightMem,676.03,multi-hop,54.96,35.15
Table 1,locomo,Qwen3-VL-2B-Instruct,LightMem,676.03,temporal,30.53,40.48
Table 1,locomo,Qwen3-VL-2B-Instruct,LightMem,676.03,open-domain,39.58,18.23
Table 1,locomo,Qwen3-VL-2B-Instruct,LightMem,676.03,single-hop,74.91,48.96
Table 1,locomo,Qwen3-VL-2B-Instruct,LightMem,676.03,Overall,59.81,42.75
Table 1,locomo,Qwen3-VL-2B-Instruct,MemOS,670.60,multi-hop,57.80,37.28
Table 1,locomo,Qwen3-VL-2B-Instruct,MemOS,670.60,temporal,28.97,33.80
Table 1,locomo,Qwen3-VL-2B-Instruct,MemOS,670.60,open-domain,38.54,17.94
Table 1,locomo,Qwen3-VL-2B-Instruct,MemOS,670.60,single-hop,76.22,54.34
Table 1,locomo,Qwen3-VL-2B-Instruct,MemOS,670.60,Overall,60.65,44.67
Table 1,locomo,Qwen3-VL-2B-Instruct,MemoryOS,571.85,multi-hop,39.01,15.69
Table 1,locomo,Qwen3-VL-2B-Instruct,MemoryOS,571.85,temporal,12.77,34.51
Table 1,locomo,Qwen3-VL-2B-Instruct,MemoryOS,571.85,open-domain,32.29,7.80
Table 1,locomo,Qwen3-VL-2B-Instruct,MemoryOS,571.85,single-hop,58.50,23.92
Table 1,locomo,Qwen3-VL-2B-Instruct,MemoryOS,571.85,Overall,43.77,23.62
Table 1,locomo,Qwen3-VL-2B-Instruct,EverMemOS,1670.10,multi-hop,37.23,8.68
Table 1,locomo,Qwen3-VL-2B-Instruct,EverMemOS,1670.10,temporal,25.23,16.69
Table 1,locomo,Qwen3-VL-2B-Instruct,EverMemOS,1670.10,open-domain,29.17,4.47
Table 1,locomo,Qwen3-VL-2B-Instruct,EverMemOS,1670.10,single-hop,60.05,11.50
Table 1,locomo,Qwen3-VL-2B-Instruct,EverMemOS,1670.10,Overall,46.69,11.63
Table 1,locomo,Qwen3-VL-2B-Instruct,MemOCR,3.43,multi-hop,28.72,26.31
Table 1,locomo,Qwen3-VL-2B-Instruct,MemOCR,3.43,temporal,15.26,25.05
Table 1,locomo,Qwen3-VL-2B-Instruct,MemOCR,3.43,open-domain,37.50,21.40
Table 1,locomo,Qwen3-VL-2B-Instruct,MemOCR,3.43,single-hop,40.43,37.54
Table 1,locomo,Qwen3-VL-2B-Instruct,MemOCR,3.43,Overall,32.86,31.87
Table 1,locomo,Qwen3-VL-2B-Instruct,MemShot,9.56,multi-hop,52.13,34.03
Table 1,locomo,Qwen3-VL-2B-Instruct,MemShot,9.56,temporal,37.07,47.21
Table 1,locomo,Qwen3-VL-2B-Instruct,MemShot,9.56,open-domain,40.62,18.06
Table 1,locomo,Qwen3-VL-2B-Instruct,MemShot,9.56,single-hop,81.81,57.57
Table 1,locomo,Qwen3-VL-2B-Instruct,MemShot,9.56,Overall,64.48,48.64
Table 1,locomo,Qwen3-VL-8B-Instruct,Text RAG,2.10,multi-hop,61.70,40.24
Table 1,locomo,Qwen3-VL-8B-Instruct,Text RAG,2.10,temporal,58.57,55.68
Table 1,locomo,Qwen3-VL-8B-Instruct,Text RAG,2.10,open-domain,41.67,23.87
Table 1,locomo,Qwen3-VL-8B-Instruct,Text RAG,2.10,single-hop,81.09,60.09
Table 1,locomo,Qwen3-VL-8B-Instruct,Text RAG,2.10,Overall,70.39,53.28
Table 1,locomo,Qwen3-VL-8B-Instruct,LightMem,439.06,multi-hop,58.16,37.85
Table 1,locomo,Qwen3-VL-8B-Instruct,LightMem,439.06,temporal,47.98,45.84
Table 1,locomo,Qwen3-VL-8B-Instruct,LightMem,439.06,open-domain,46.88,22.08
Table 1,locomo,Qwen3-VL-8B-Instruct,LightMem,439.06,single-hop,81.33,54.32
Table 1,locomo,Qwen3-VL-8B-Instruct,LightMem,439.06,Overall,67.99,47.53
Table 1,locomo,Qwen3-VL-8B-Instruct,MemOS,673.58,multi-hop,67.38,44.68
Table 1,locomo,Qwen3-VL-8B-Instruct,MemOS,673.58,temporal,45.17,39.20
Table 1,locomo,Qwen3-VL-8B-Instruct,MemOS,673.58,open-domain,50.00,25.74
Table 1,locomo,Qwen3-VL-8B-Instruct,MemOS,673.58,single-hop,83.71,61.33
Table 1,locomo,Qwen3-VL-8B-Instruct,MemOS,673.58,Overall,70.58,51.45
Table 1,locomo,Qwen3-VL-8B-Instruct,MemoryOS,1203.24,multi-hop,53.90,36.17
Table 1,locomo,Qwen3-VL-8B-Instruct,MemoryOS,1203.24,temporal,26.48,39.66
Table 1,locomo,Qwen3-VL-8B-Instruct,MemoryOS,1203.24,open-domain,42.71,20.89
Table 1,locomo,Qwen3-VL-8B-Instruct,MemoryOS,1203.24,single-hop,72.77,53.41
Table 1,locomo,Qwen3-VL-8B-Instruct,MemoryOS,1203.24,Overall,57.79,45.36
Table 1,locomo,Qwen3-VL-8B-Instruct,EverMemOS,929.83,multi-hop,66.31,15.15
Table 1,locomo,Qwen3-VL-8B-Instruct,EverMemOS,929.83,temporal,68.54,22.29
Table 1,locomo,Qwen3-VL-8B-Instruct,EverMemOS,929.83,open-domain,50.00,8.14
Table 1,locomo,Qwen3-VL-8B-Instruct,EverMemOS,929.83,single-hop,85.37,18.98
Table 1,locomo,Qwen3-VL-8B-Instruct,EverMemOS,929.83,Overall,76.17,18.29
Table 1,locomo,Qwen3-VL-8B-Instruct,MemOCR,5.31,multi-hop,54.96,31.41
Table 1,locomo,Qwen3-VL-8B-Instruct,MemOCR,5.31,temporal,39.56,47.44
Table 1,locomo,Qwen3-VL-8B-Instruct,MemOCR,5.31,open-domain,57.29,29.85
Table 1,locomo,Qwen3-VL-8B-Instruct,MemOCR,5.31,single-hop,73.84,43.35
Table 1,locomo,Qwen3-VL-8B-Instruct,MemOCR,5.31,Overall,62.21,41.17
Table 1,locomo,Qwen3-VL-8B-Instruct,MemShot,9.56,multi-hop,60.99,39.99
Table 1,locomo,Qwen3-VL-8B-Instruct,MemShot,9.56,temporal,70.72,60.07
Table 1,locomo,Qwen3-VL-8B-Instruct,MemShot,9.56,open-domain,41.67,22.84
Table 1,locomo,Qwen3-VL-8B-Instruct,MemShot,9.56,single-hop,85.37,64.44
Table 1,locomo,Qwen3-VL-8B-Instruct,MemShot,9.56,Overall,75.13,56.46
Table 1,locomo,Qwen3-VL-32B-Instruct,Text RAG,2.10,multi-hop,67.73,42.26
Table 1,locomo,Qwen3-VL-32B-Instruct,Text RAG,2.10,temporal,73.21,60.82
Table 1,locomo,Qwen3-VL-32B-Instruct,Text RAG,2.10,open-domain,56.25,31.13
Table 1,locomo,Qwen3-VL-32B-Instruct,Text RAG,2.10,single-hop,84.54,61.04
Table 1,locomo,Qwen3-VL-32B-Instruct,Text RAG,2.10,Overall,77.34,55.69
Table 1,locomo,Qwen3-VL-32B-Instruct,LightMem,700.50,multi-hop,70.57,38.68
Table 1,locomo,Qwen3-VL-32B-Instruct,LightMem,700.50,temporal,59.19,49.79
Table 1,locomo,Qwen3-VL-32B-Instruct,LightMem,700.50,open-domain,50.00,20.52
Table 1,locomo,Qwen3-VL-32B-Instruct,LightMem,700.50,single-hop,84.19,57.20
Table 1,locomo,Qwen3-VL-32B-Instruct,LightMem,700.50,Overall,74.35,49.98
Table 1,locomo,Qwen3-VL-32B-Instruct,MemOS,669.45,multi-hop,69.86,40.26
Table 1,locomo,Qwen3-VL-32B-Instruct,MemOS,669.45,temporal,72.59,42.87
Table 1,locomo,Qwen3-VL-32B-Instruct,MemOS,669.45,open-domain,58.33,28.09
Table 1,locomo,Qwen3-VL-32B-Instruct,MemOS,669.45,single-hop,86.68,59.53
Table 1,locomo,Qwen3-VL-32B-Instruct,MemOS,669.45,Overall,78.90,50.57
Table 1,locomo,Qwen3-VL-32B-Instruct,MemoryOS,3471.94,multi-hop,64.54,41.43
Table 1,locomo,Qwen3-VL-32B-Instruct,MemoryOS,3471.94,temporal,37.69,49.76
Table 1,locomo,Qwen3-VL-32B-Instruct,MemoryOS,3471.94,open-domain,48.36,26.50
Table 1,locomo,Qwen3-VL-32B-Instruct,MemoryOS,3471.94,single-hop,76.22,56.52
Table 1,locomo,Qwen3-VL-32B-Instruct,MemoryOS,3471.94,Overall,64.35,50.48
Table 1,locomo,Qwen3-VL-32B-Instruct,EverMemOS,1957.94,multi-hop,68.79,12.16
Table 1,locomo,Qwen3-VL-32B-Instruct,EverMemOS,1957.94,temporal,73.52,21.48
Table 1,locomo,Qwen3-VL-32B-Instruct,EverMemOS,1957.94,open-domain,44.79,7.42
Table 1,locomo,Qwen3-VL-32B-Instruct,EverMemOS,1957.94,single-hop,85.14,16.00
Table 1,locomo,Qwen3-VL-32B-Instruct,EverMemOS,1957.94,Overall,77.21,15.91
Table 1,locomo,Qwen3-VL-32B-Instruct,MemOCR,12.03,multi-hop,65.60,29.58
Table 1,locomo,Qwen3-VL-32B-Instruct,MemOCR,12.03,temporal,67.91,57.85
Table 1,locomo,Qwen3-VL-32B-Instruct,MemOCR,12.03,open-domain,62.50,30.05
Table 1,locomo,Qwen3-VL-32B-Instruct,MemOCR,12.03,single-hop,78.36,40.03
Table 1,locomo,Qwen3-VL-32B-Instruct,MemOCR,12.03,Overall,72.86,41.21
Table 1,locomo,Qwen3-VL-32B-Instruct,MemShot,9.56,multi-hop,65.96,40.62
Table 1,locomo,Qwen3-VL-32B-Instruct,MemShot,9.56,temporal,78.19,63.14
Table 1,locomo,Qwen3-VL-32B-Instruct,MemShot,9.56,open-domain,53.12,30.85
Table 1,locomo,Qwen3-VL-32B-Instruct,MemShot,9.56,single-hop,87.75,65.75
Table 1,locomo,Qwen3-VL-32B-Instruct,MemShot,9.56,Overall,79.61,58.43
Table 2,longmemeval,Qwen3-VL-8B-Instruct,Text RAG,,single-session-user,87.14,72.59
Table 2,longmemeval,Qwen3-VL-8B-Instruct,Text RAG,,single-session-assistant,94.64,79.66
Table 2,longmemeval,Qwen3-VL-8B-Instruct,Text RAG,,single-session-preference,30.00,6.51
Table 2,longmemeval,Qwen3-VL-8B-Instruct,Text RAG,,multi-session,48.87,37.13
Table 2,longmemeval,Qwen3-VL-8B-Instruct,Text RAG,,knowledge-update,67.95,50.35
Table 2,longmemeval,Qwen3-VL-8B-Instruct,Text RAG,,temporal-reasoning,46.62,34.29
Table 2,longmemeval,Qwen3-VL-8B-Instruct,Text RAG,,Overall,60.60,46.33
Table 2,longmemeval,Qwen3-VL-8B-Instruct,LightMem,,single-session-user,92.86,12.72
Table 2,longmemeval,Qwen3-VL-8B-Instruct,LightMem,,single-session-assistant,25.00,5.06
Table 2,longmemeval,Qwen3-VL-8B-Instruct,LightMem,,single-session-preference,80.00,9.20
Table 2,longmemeval,Qwen3-VL-8B-Instruct,LightMem,,multi-session,68.42,6.63
Table 2,longmemeval,Qwen3-VL-8B-Instruct,LightMem,,knowledge-update,70.51,5.66
Table 2,longmemeval,Qwen3-VL-8B-Instruct,LightMem,,temporal-reasoning,67.67,8.13
Table 2,longmemeval,Qwen3-VL-8B-Instruct,LightMem,,Overall,67.80,7.71
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOS,,single-session-user,85.71,22.80
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOS,,single-session-assistant,94.64,25.48
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOS,,single-session-preference,56.67,11.37
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOS,,multi-session,47.37,6.67
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOS,,knowledge-update,80.77,7.95
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOS,,temporal-reasoning,51.13,7.52
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOS,,Overall,64.80,11.74
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemoryOS,,single-session-user,85.71,75.94
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemoryOS,,single-session-assistant,85.71,69.51
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemoryOS,,single-session-preference,53.33,9.85
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemoryOS,,multi-session,29.32,30.72
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemoryOS,,knowledge-update,56.41,54.08
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemoryOS,,temporal-reasoning,30.08,32.91
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemoryOS,,Overall,49.40,44.37
Table 2,longmemeval,Qwen3-VL-8B-Instruct,EverMemOS,,single-session-user,92.86,30.39
Table 2,longmemeval,Qwen3-VL-8B-Instruct,EverMemOS,,single-session-assistant,67.86,27.83
Table 2,longmemeval,Qwen3-VL-8B-Instruct,EverMemOS,,single-session-preference,56.67,10.81
Table 2,longmemeval,Qwen3-VL-8B-Instruct,EverMemOS,,multi-session,60.90,11.44
Table 2,longmemeval,Qwen3-VL-8B-Instruct,EverMemOS,,knowledge-update,74.36,17.47
Table 2,longmemeval,Qwen3-VL-8B-Instruct,EverMemOS,,temporal-reasoning,49.62,15.60
Table 2,longmemeval,Qwen3-VL-8B-Instruct,EverMemOS,,Overall,65.00,17.94
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOCR,,single-session-user,88.57,67.77
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOCR,,single-session-assistant,89.29,63.05
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOCR,,single-session-preference,33.33,8.64
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOCR,,multi-session,42.11,31.22
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOCR,,knowledge-update,79.49,49.25
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOCR,,temporal-reasoning,29.32,27.87
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemOCR,,Overall,55.80,40.60
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemShot,,single-session-user,95.71,82.48
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemShot,,single-session-assistant,98.21,78.05
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemShot,,single-session-preference,33.33,6.94
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemShot,,multi-session,57.89,42.73
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemShot,,knowledge-update,71.79,61.30
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemShot,,temporal-reasoning,48.87,34.88
Table 2,longmemeval,Qwen3-VL-8B-Instruct,MemShot,,Overall,66.00,50.91
Table 2,longmemeval,Qwen3-VL-32B-Instruct,Text RAG,,single-session-user,94.29,76.08
Table 2,longmemeval,Qwen3-VL-32B-Instruct,Text RAG,,single-session-assistant,98.21,83.62
Table 2,longmemeval,Qwen3-VL-32B-Instruct,Text RAG,,single-session-preference,50.00,10.41
Table 2,longmemeval,Qwen3-VL-32B-Instruct,Text RAG,,multi-session,64.66,48.60
Table 2,longmemeval,Qwen3-VL-32B-Instruct,Text RAG,,knowledge-update,73.08,51.07
Table 2,longmemeval,Qwen3-VL-32B-Instruct,Text RAG,,temporal-reasoning,62.41,38.93
Table 2,longmemeval,Qwen3-VL-32B-Instruct,Text RAG,,Overall,72.40,51.89
Table 2,longmemeval,Qwen3-VL-32B-Instruct,LightMem,,single-session-user,97.14,13.71
Table 2,longmemeval,Qwen3-VL-32B-Instruct,LightMem,,single-session-assistant,26.79,6.00
Table 2,longmemeval,Qwen3-VL-32B-Instruct,LightMem,,single-session-preference,93.33,11.05
Table 2,longmemeval,Qwen3-VL-32B-Instruct,LightMem,,multi-session,76.69,6.49
Table 2,longmemeval,Qwen3-VL-32B-Instruct,LightMem,,knowledge-update,83.33,5.79
Table 2,longmemeval,Qwen3-VL-32B-Instruct,LightMem,,temporal-reasoning,79.70,8.65
Table 2,longmemeval,Qwen3-VL-32B-Instruct,LightMem,,Overall,76.80,8.18
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOS,,single-session-user,85.71,10.24
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOS,,single-session-assistant,94.64,16.69
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOS,,single-session-preference,73.33,12.86
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOS,,multi-session,48.12,4.76
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOS,,knowledge-update,84.62,6.73
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOS,,temporal-reasoning,58.65,6.27
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOS,,Overall,68.60,8.06
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemoryOS,,single-session-user,91.43,76.27
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemoryOS,,single-session-assistant,92.86,77.75
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemoryOS,,single-session-preference,63.33,9.75
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemoryOS,,multi-session,54.14,45.54
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemoryOS,,knowledge-update,70.51,60.37
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemoryOS,,temporal-reasoning,45.11,42.33
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemoryOS,,Overall,64.40,52.76
Table 2,longmemeval,Qwen3-VL-32B-Instruct,EverMemOS,,single-session-user,94.29,26.06
Table 2,longmemeval,Qwen3-VL-32B-Instruct,EverMemOS,,single-session-assistant,89.29,25.95
Table 2,longmemeval,Qwen3-VL-32B-Instruct,EverMemOS,,single-session-preference,90.00,13.55
Table 2,longmemeval,Qwen3-VL-32B-Instruct,EverMemOS,,multi-session,64.66,10.64
Table 2,longmemeval,Qwen3-VL-32B-Instruct,EverMemOS,,knowledge-update,83.33,14.61
Table 2,longmemeval,Qwen3-VL-32B-Instruct,EverMemOS,,temporal-reasoning,57.89,15.98
Table 2,longmemeval,Qwen3-VL-32B-Instruct,EverMemOS,,Overall,74.20,16.73
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOCR,,single-session-user,85.71,70.53
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOCR,,single-session-assistant,98.21,69.20
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOCR,,single-session-preference,50.00,11.98
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOCR,,multi-session,52.63,40.89
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOCR,,knowledge-update,76.92,53.69
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOCR,,temporal-reasoning,36.84,27.90
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemOCR,,Overall,61.80,45.32
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemShot,,single-session-user,95.71,81.76
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemShot,,single-session-assistant,98.21,82.51
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemShot,,single-session-preference,50.00,8.47
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemShot,,multi-session,66.17,51.47
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemShot,,knowledge-update,89.74,61.49
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemShot,,temporal-reasoning,59.40,41.53
Table 2,longmemeval,Qwen3-VL-32B-Instruct,MemShot,,Overall,74.80,55.53
Table 4,longmemeval,Qwen3-VL-2B-Instruct,Text RAG,,single-session-user,77.14,37.68
Table 4,longmemeval,Qwen3-VL-2B-Instruct,Text RAG,,single-session-assistant,80.36,59.44
Table 4,longmemeval,Qwen3-VL-2B-Instruct,Text RAG,,single-session-preference,23.33,12.51
Table 4,longmemeval,Qwen3-VL-2B-Instruct,Text RAG,,multi-session,22.56,15.65
Table 4,longmemeval,Qwen3-VL-2B-Instruct,Text RAG,,knowledge-update,55.13,27.82
Table 4,longmemeval,Qwen3-VL-2B-Instruct,Text RAG,,temporal-reasoning,27.82,20.61
Table 4,longmemeval,Qwen3-VL-2B-Instruct,Text RAG,,Overall,43.20,26.67
Table 4,longmemeval,Qwen3-VL-2B-Instruct,LightMem,,single-session-user,55.71,13.93
Table 4,longmemeval,Qwen3-VL-2B-Instruct,LightMem,,single-session-assistant,16.07,6.89
Table 4,longmemeval,Qwen3-VL-2B-Instruct,LightMem,,single-session-preference,66.67,11.80
Table 4,longmemeval,Qwen3-VL-2B-Instruct,LightMem,,multi-session,13.53,4.78
Table 4,longmemeval,Qwen3-VL-2B-Instruct,LightMem,,knowledge-update,38.46,7.74
Table 4,longmemeval,Qwen3-VL-2B-Instruct,LightMem,,temporal-reasoning,26.32,8.15
Table 4,longmemeval,Qwen3-VL-2B-Instruct,LightMem,,Overall,30.20,8.08
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOS,,single-session-user,80.00,25.17
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOS,,single-session-assistant,92.86,27.87
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOS,,single-session-preference,53.33,14.19
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOS,,multi-session,29.32,6.22
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOS,,knowledge-update,56.41,12.72
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOS,,temporal-reasoning,33.83,8.61
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOS,,Overall,50.40,13.55
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemoryOS,,single-session-user,71.43,48.21
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemoryOS,,single-session-assistant,78.57,52.59
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemoryOS,,single-session-preference,13.33,3.39
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemoryOS,,multi-session,25.56,12.58
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemoryOS,,knowledge-update,50.00,30.79
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemoryOS,,temporal-reasoning,14.29,14.99
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemoryOS,,Overall,38.00,24.98
Table 4,longmemeval,Qwen3-VL-2B-Instruct,EverMemOS,,single-session-user,54.29,12.81
Table 4,longmemeval,Qwen3-VL-2B-Instruct,EverMemOS,,single-session-assistant,32.14,14.26
Table 4,longmemeval,Qwen3-VL-2B-Instruct,EverMemOS,,single-session-preference,23.33,11.11
Table 4,longmemeval,Qwen3-VL-2B-Instruct,EverMemOS,,multi-session,21.05,7.88
Table 4,longmemeval,Qwen3-VL-2B-Instruct,EverMemOS,,knowledge-update,25.64,7.91
Table 4,longmemeval,Qwen3-VL-2B-Instruct,EverMemOS,,temporal-reasoning,18.05,10.14
Table 4,longmemeval,Qwen3-VL-2B-Instruct,EverMemOS,,Overall,27.00,10.19
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOCR,,single-session-user,21.43,18.61
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOCR,,single-session-assistant,23.21,22.99
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOCR,,single-session-preference,13.33,9.79
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOCR,,multi-session,9.02,8.09
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOCR,,knowledge-update,37.18,31.44
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOCR,,temporal-reasoning,18.80,19.26
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemOCR,,Overall,19.60,17.95
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemShot,,single-session-user,91.43,75.38
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemShot,,single-session-assistant,91.07,76.03
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemShot,,single-session-preference,30.00,6.50
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemShot,,multi-session,23.31,21.07
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemShot,,knowledge-update,48.72,37.34
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemShot,,temporal-reasoning,26.32,27.65
Table 4,longmemeval,Qwen3-VL-2B-Instruct,MemShot,,Overall,45.60,38.24
"""


def quoted_rows() -> pl.DataFrame:
    """Every quoted cell, long: one row per (table, backbone, method, category); Acc/F1 as
    proportions in [0, 1] (as the measured tables), ``source`` = :data:`QUOTED`."""
    df = pl.read_csv(io.StringIO(_CSV), schema_overrides={"latency_s": pl.Float64, "acc": pl.Float64,
                                                           "f1": pl.Float64})
    return df.with_columns(pl.col("acc") / 100, pl.col("f1") / 100, pl.lit(QUOTED).alias("source"))


def quoted_table(dataset: str, *, methods: tuple[str, ...] | None = None) -> pl.DataFrame:
    """The paper's table for ``dataset`` in its layout: one row per (table, backbone, method),
    ``<category> Acc`` / ``<category> F1`` columns in the paper's order, ``Latency (s)`` (LoCoMo),
    and ``source`` = quoted. ``methods`` keeps only those rows (e.g. the external baselines)."""
    long = quoted_rows().filter(pl.col("dataset") == dataset)
    if methods is not None:
        long = long.filter(pl.col("method").is_in(list(methods)))
    if long.height == 0:
        return pl.DataFrame()
    cats = list(dict.fromkeys(long["category"].to_list()))
    idx = ["table", "backbone", "method"]
    wide = long.pivot(on="category", index=idx, values=["acc", "f1"], maintain_order=True)
    cols = [pl.col(f"{m}_{c}").alias(f"{c} {m.capitalize() if m == 'acc' else 'F1'}") for c in cats for m in ("acc", "f1")]
    lat = long.group_by(idx, maintain_order=True).agg(pl.col("latency_s").first().alias("Latency (s)"))
    out = wide.select(*idx, *cols).join(lat, on=idx, how="left", maintain_order="left")
    if out["Latency (s)"].null_count() == out.height:
        out = out.drop("Latency (s)")
    return out.with_columns(pl.lit(QUOTED).alias("source"))


#: The external baselines of Tables 1-2 (rows kept in the report, quoted unless measured).
EXTERNAL = ("LightMem", "MemOS", "MemoryOS", "EverMemOS", "MemOCR")

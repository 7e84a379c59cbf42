"""What Mnemo counts for Prometheus: the metric catalogue (``catalogue``) and the one-line calls that record
into it (``record``). Imports nothing of Mnemo: the hot path, the LLM client, the workers and the API record;
each process's operations endpoint (``shared/app/ops_server.py``) exposes. No label ever carries a user id,
a chat id or anything a user wrote: every label value comes from a short fixed list.
"""

"""Who may spend the operator's budget: the allow and block lists, the operators who change them, and the
rule that says whether a message may be answered (``rule``, pure), read from the settings and the
``access_entries`` table (``service``), with the operators' ``/access`` command (``requests``, pure) and
the words of both (``texts``).
"""

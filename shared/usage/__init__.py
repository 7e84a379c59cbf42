"""What the language model costs and who may spend it: prices, daily quotas, usage reports (``/usage``,
the panel's card, ``mnemo usage``). The requests themselves are metered by :mod:`shared.llm.metering`
and recorded by the work that made them (``uow.usage.record``)."""

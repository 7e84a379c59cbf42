"""Loopback fakes the benchmarks run against, shipped with Mnemo so `mnemo bench` works from a wheel or
the image: an OpenAI-compatible server (`openai_server`, with the personalities of real servers in
`llm_personalities`) on the loopback HTTP base (`loopback`). The tests use them too."""

"""What a person's words are: statements, questions, requests, greetings (speech acts), the statement
rules and lexicon, and which stored keys a recall question asks for. Pure: no database, LLM, Celery
or platform code.
"""

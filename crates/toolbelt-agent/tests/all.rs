//! toolbelt-agent's test suite: the providers against byte-true loopback servers,
//! the scripted provider, and the agent loop over the real registry.

mod suite;

"""The write path: the rules a row obeys, the guard, chains, promotion, purge, rights, vault."""

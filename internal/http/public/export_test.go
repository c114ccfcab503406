package public

// Runs is how many verifications c ran (each a miss of its memory).
func (c *Checks) Runs() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.runs
}

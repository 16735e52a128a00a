package board

// SetSettlePage sets how many members one settle script call copies, so
// that tests settle in many steps.
func (s *Store) SetSettlePage(n int) { s.page = n }

// KeySlot returns the Redis Cluster hash slot of key (slot.go).
func KeySlot(key string) int { return keySlot(key) }

// RegistryKey returns the key of the environment's period registry.
func (s *Store) RegistryKey() string { return s.registryKey() }

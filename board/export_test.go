package board

// SetSettlePage sets how many members one settle script call copies, so
// that tests settle in many steps.
func (s *Store) SetSettlePage(n int) { s.page = n }

package processor

// BufferedFetchRecords is how many records the Kafka client has fetched
// and no poll has taken yet.
func (p *Processor) BufferedFetchRecords() int64 { return p.cl.BufferedFetchRecords() }

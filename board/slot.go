package board

// Redis Cluster hash slots, computed as Redis does (the cluster
// specification's HASH_SLOT): CRC16-XMODEM of the key's hash tag (the text
// between the first '{' and the first '}' after it, when not empty) or of
// the whole key, modulo 16384. Reads that gather many boards group their
// keys by slot so that each group is one script call, whatever key layout
// the boards use: the slot comes from the keys the store builds, never from
// an assumption about them.

// slotCount is the number of hash slots of a Redis Cluster.
const slotCount = 16384

// keySlot returns the hash slot of key.
func keySlot(key string) int {
	return int(crc16(hashTag(key)) % slotCount)
}

// hashTag returns the part of key that decides its slot.
func hashTag(key string) string {
	for i := 0; i < len(key); i++ {
		if key[i] != '{' {
			continue
		}
		for j := i + 1; j < len(key); j++ {
			if key[j] == '}' {
				if j == i+1 {
					return key // "{}": the whole key
				}
				return key[i+1 : j]
			}
		}
		return key // no '}' after the first '{'
	}
	return key
}

// crc16 is CRC16-CCITT (XMODEM: polynomial 0x1021, initial value 0), the
// checksum Redis Cluster hashes keys with.
func crc16(s string) uint16 {
	var crc uint16
	for i := 0; i < len(s); i++ {
		crc ^= uint16(s[i]) << 8
		for range 8 {
			if crc&0x8000 != 0 {
				crc = crc<<1 ^ 0x1021
			} else {
				crc <<= 1
			}
		}
	}
	return crc
}

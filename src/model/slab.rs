//! Entities live in `Vec`s indexed by a `u32` id, with a free list so that
//! memory follows the work in flight, not the length of the run.

pub struct Slab<T> {
    items: Vec<T>,
    free: Vec<u32>,
    live: usize,
}

impl<T> Default for Slab<T> {
    fn default() -> Self {
        Slab {
            items: Vec::new(),
            free: Vec::new(),
            live: 0,
        }
    }
}

impl<T> Slab<T> {
    /// Stores a new entity. `make` sees the previous occupant of the reused
    /// slot, if any, so that generations can keep counting up across reuse.
    #[inline]
    pub fn insert(&mut self, make: impl FnOnce(Option<&T>) -> T) -> u32 {
        self.live += 1;
        if let Some(id) = self.free.pop() {
            let item = make(Some(&self.items[id as usize]));
            self.items[id as usize] = item;
            id
        } else {
            let item = make(None);
            self.items.push(item);
            (self.items.len() - 1) as u32
        }
    }

    /// Returns a slot to the free list. The item stays readable (stale
    /// events check its generation) until the slot is reused.
    #[inline]
    pub fn remove(&mut self, id: u32) {
        self.live -= 1;
        self.free.push(id);
    }

    #[inline]
    pub fn get(&self, id: u32) -> &T {
        &self.items[id as usize]
    }

    #[inline]
    pub fn get_mut(&mut self, id: u32) -> &mut T {
        &mut self.items[id as usize]
    }

    /// Entities alive now.
    pub fn live(&self) -> usize {
        self.live
    }

    /// Every slot, live or free, with its id.
    pub fn iter_ids(&self) -> impl Iterator<Item = u32> + '_ {
        0..self.items.len() as u32
    }
}
